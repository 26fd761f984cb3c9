"""The compile gate of a batch: one compile for the course's GPU per distinct generated
kernel, made by the grader where no student code ran.

Every kernel run must learn whether its generated kernel builds for the course's GPU
(grader.core.gpu_compile) before any case. Most files of a class generate the very same
kernel file (in the 100-file stress class, 80 builds held 23 distinct results), and a
compile is a large share of a passing file's time (docs/stress-runs/timeline.md, the runs of
the compile gate). So the kernel run does not compile:
it sends the bytes of its generated file to the parent (grader.batch.inside.protocol,
``compile``), and the parent answers with the Build of exactly those bytes:

* the parent hashes the bytes itself and runs the kernel check on them
  (grader.core.generated_kernel), as the compile child does again before it compiles;
* a hash it has not met in this batch is compiled in a fresh sandbox that holds that one
  file and nothing a run left behind (grader.batch.isolation.one_shot); a run waiting for
  the same hash meanwhile waits for that compile;
* the Build is kept in this process's memory, keyed by the hash, for the batch (the target
  and Triton are the batch's own), and where the staff name a folder for it, between
  batches too (grader.batch.isolation.compile_store). No entry is ever written by student
  code: a run only chooses which bytes are compiled, and the bytes are the key.

A run that sends other bytes than it runs escapes only its own gate, as a run that lied
about its own compile could before. Each run is charged the seconds its kernel's compile
took, as when it compiled the kernel itself, whichever run the compile was made for, and
not the rest of its wait (grader.batch.isolation.conversation): a file's verdict does not
depend on whether another file compiled its kernel first. A Build that could not be made
(``checked`` False without a refusal: the compile timed out, say) is handed to the runs that
waited for it and not kept.
"""

import collections
import concurrent.futures
import dataclasses
import hashlib
import importlib.metadata
import threading
import time

from grader.batch.isolation import one_shot
from grader.core import generated_kernel, gpu_compile

MEMORY_BYTES = 8 << 30  # at most, for one compile's process tree


@dataclasses.dataclass(frozen=True)
class Answer:
    build: object  # a grader.core.gpu_compile.Build
    compile_s: float  # the seconds the compile took, whichever run it was made for
    shared: bool = False  # made for an earlier run (of this batch, or kept in the store)


class CompileGate:
    """The Builds of one batch, by the sha256 of the generated file's bytes."""

    def __init__(
        self, *, backend_name, sandboxed, target=None, memory_bytes=MEMORY_BYTES, store=None
    ):
        """``store``: a grader.batch.isolation.compile_store.Store, Builds kept between
        batches (else this batch's alone)."""
        self.longest_s = gpu_compile.CHILD_TIMEOUT_S + 30  # a compile's own time limit
        self.options = dict(
            backend_name=backend_name,
            sandboxed=sandboxed,
            timeout_s=self.longest_s,
            memory_bytes=memory_bytes,
        )
        self.target = gpu_compile.parse_target(target or gpu_compile.requested_target())
        self.store = store
        self.entries = {}  # sha256 -> Future of its Answer
        self.lock = threading.Lock()
        self.counts = collections.Counter()  # "compiled", "shared" (in this batch), "stored"

    def build(self, data):
        """The Answer for the generated file ``data``: its Build, made now or for an earlier
        run (of this batch, or of one before it that kept it in the store)."""
        digest = hashlib.sha256(data).hexdigest()
        with self.lock:
            future = self.entries.get(digest)
            mine = future is None
            if mine:
                future = self.entries[digest] = concurrent.futures.Future()
            else:
                self.counts["shared"] += 1
        if not mine:
            return dataclasses.replace(future.result(), shared=True)
        try:
            answer = self._stored(digest) or self._made(data, digest)
        except BaseException as error:
            with self.lock:
                del self.entries[digest]
            future.set_exception(error)
            raise
        kept = answer.build.checked or bool(answer.build.refused)
        with self.lock:
            self.counts["stored" if answer.shared else "compiled"] += 1
            if not kept:
                del self.entries[digest]
        future.set_result(answer)
        if kept and self.store is not None and not answer.shared:
            try:
                self.store.put(digest, self.target, answer.build.to_fields(), answer.compile_s)
            except OSError:
                pass  # a full disk, say: a later batch compiles this file again
        return answer

    def _stored(self, digest):
        found = self.store.get(digest, self.target) if self.store is not None else None
        if found is None:
            return None
        build = gpu_compile.Build.from_fields(found[0])
        return Answer(build, found[1], shared=True) if build is not None else None

    def _made(self, data, digest):
        started = time.monotonic()
        build = self._compile(data, digest)
        return Answer(build, round(time.monotonic() - started, 2))

    def _compile(self, data, digest):
        try:
            violations = generated_kernel.check(data.decode("utf-8"))
        except UnicodeDecodeError:
            return self._refused("the generated kernel is not UTF-8 text")
        except (RecursionError, MemoryError, ValueError) as error:
            # Bytes no NineToothed wrote (a worker sends whatever it is made to): the parser
            # gave up on them, which must not end this grading thread.
            return self._refused(f"the kernel check could not read it ({type(error).__name__})")
        if violations:
            return self._refused(generated_kernel.describe(violations))
        done = one_shot.run(
            lambda path: gpu_compile.child_arguments(path, digest, self.target),
            data,
            environment={gpu_compile.TRITON_KEY_VAR: _fresh_cache_key()},
            **self.options,
        )
        if done.over == "time":
            return gpu_compile.timed_out(self.target)
        if done.over == "memory":
            return gpu_compile.Build(
                self.target,
                False,
                f"compiling took over {self.options['memory_bytes'] / 2**30:g} GiB of memory",
                checked=False,
            )
        return gpu_compile.read_child(self.target, done.returncode, done.stdout, done.stderr)

    def _refused(self, why):
        return gpu_compile.Build(
            self.target,
            False,
            "the generated kernel was refused",
            checked=False,
            refused=why[: gpu_compile.MESSAGE_LIMIT],
        )


def _fresh_cache_key():
    """The Triton key for a compile whose Triton cache is new and empty (a fresh sandbox's
    /tmp): its version alone, as grader.core.gpu_compile.key_by_version_in_a_private_cache
    reasons, instead of hashing Triton's files in each compile."""
    return f"{importlib.metadata.version('triton')}-one-run"
