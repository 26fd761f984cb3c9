"""The case catalogue: the one list of shapes every part of the kit grades with.

The public tests, the pytest grader, the batch grader and the docs' case table
all read this module. Each case names the mistake it is there to catch (a key of
``grader.core.mistakes.MISTAKES``), so a failure can be explained, not just reported.

Interpreter budget: on the CPU a kernel costs roughly 20-40 ms per
(program x K-tile) step at 64x64x64 blocks, so every case that runs there keeps
the property it targets at up to about 256 per dimension.
"""

import dataclasses
import hashlib
import hmac
import math
import random
import re

BOTH = ("gpu", "interpreter")
GPU_ONLY = ("gpu",)

DEFAULT_SEED = 2026  # public: a student's own pytest grader uses it; a batch makes its own
SECRET_BITS = 128  # the least a grading secret needs to hold against an offline search
HIDDEN_COUNT = 3
HIDDEN = "hidden"  # the group of the random cases, whose shapes come from the secret

# Checks a case can ask for (see grader.core.checks):
GEMM = "gemm"  # one call of nt_gemm, compared with a float32-accumulated reference
DETERMINISM = "determinism"  # two calls on the same inputs give identical bits
COVERAGE = "coverage"  # the kernel writes every element of a NaN-filled output

# Inputs a case can ask for (see grader.core.checks.make_inputs):
RANDOM = "random"  # standard normal entries
CANCELLATION = "cancellation"  # a long sum whose large terms cancel (see make_inputs)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    m: int
    n: int
    k: int
    group: str
    targets: str
    points: int = 1
    visibility: str = "hidden"
    backends: tuple = BOTH
    check: str = GEMM
    why: str = ""
    inputs: str = RANDOM
    blocks: tuple = None  # (BM, BN, BK) the grader builds the kernel at; None: the file's own

    @property
    def id(self):
        """The gradebook's column and the record's key: a random case's is its name alone,
        since its shape is part of the secret."""
        return self.name if self.group == HIDDEN else self.label

    @property
    def label(self):
        return f"{self.name}-{self.m}x{self.n}x{self.k}"

    @property
    def shape(self):
        return (self.m, self.n, self.k)

    def runs_on(self, backend_name):
        return backend_name in self.backends

    def describe(self, reveal=True):
        """What feedback may say about the case: hidden shapes stay hidden."""
        if reveal or self.visibility == "public":
            return self.label
        return f"{self.name} (hidden)"


def _fixed_cases():
    public = "public"
    return [
        # The guide's public test and its five extra shapes.
        Case(
            "square",
            512,
            512,
            512,
            "square",
            "accumulator",
            visibility=public,
            backends=GPU_ONLY,
            why="8x8 programs, 8 K tiles each: plain multi-round accumulation",
        ),
        Case(
            "nonsquare",
            128,
            256,
            192,
            "nonsquare",
            "expand_axis",
            visibility=public,
            why="M, N and K all differ, so swapped M/N block counts show",
        ),
        Case(
            "tail_m",
            65,
            128,
            128,
            "tail",
            "tail_mask",
            visibility=public,
            why="only M has a partial tile",
        ),
        Case(
            "tail_n",
            128,
            97,
            128,
            "tail",
            "tail_mask",
            visibility=public,
            why="only N has a partial tile",
        ),
        Case(
            "tail_k",
            128,
            128,
            130,
            "tail",
            "k_tail",
            visibility=public,
            why="two full K tiles and a 2-wide tail",
        ),
        Case(
            "tail_mnk",
            65,
            97,
            130,
            "tail",
            "k_tail",
            visibility=public,
            why="partial tiles in M, N and K at once",
        ),
        # Squares.
        Case("square", 1, 1, 1, "square", "tail_mask", why="a single element"),
        Case("square", 16, 16, 16, "square", "tail_mask", why="smaller than one tile"),
        Case("square", 64, 64, 64, "square", "tile_shape", why="exactly one tile"),
        Case(
            "square",
            256,
            256,
            256,
            "square",
            "accumulator",
            why="4x4 programs, 4 K tiles: the interpreter-sized square",
        ),
        Case(
            "square",
            2048,
            2048,
            2048,
            "square",
            "accumulator",
            backends=GPU_ONLY,
            why="a realistic size",
        ),
        Case(
            "square",
            4096,
            4096,
            4096,
            "square",
            "accumulator",
            backends=GPU_ONLY,
            why="the benchmark's largest size",
        ),
        # Non-square: transposes of the guide's shape.
        Case(
            "nonsquare",
            256,
            128,
            192,
            "nonsquare",
            "expand_axis",
            why="M and N swapped relative to the public case",
        ),
        Case(
            "nonsquare", 192, 128, 256, "nonsquare", "expand_axis", why="K is the largest dimension"
        ),
        # Tails.
        Case("tail_k_small", 128, 128, 40, "tail", "k_tail", why="K smaller than one K tile"),
        Case("tiny", 1, 2, 3, "tail", "tail_mask", why="dimensions of 1 to 3"),
        Case("tiny", 3, 1, 2, "tail", "tail_mask", why="dimensions of 1 to 3"),
        Case("tiny", 2, 3, 1, "tail", "tail_mask", why="K of 1"),
        # Skinny shapes, as in LLM decoding.
        Case("skinny", 1, 256, 256, "skinny", "expand_axis", why="one row: a decode step"),
        Case("skinny", 16, 256, 192, "skinny", "expand_axis", why="a small batch"),
        Case("skinny", 256, 8, 192, "skinny", "expand_axis", why="tall and thin"),
        Case(
            "skinny",
            16,
            4096,
            4096,
            "skinny",
            "expand_axis",
            backends=GPU_ONLY,
            why="a decode-sized GEMM at model width",
        ),
        # Long K: many rounds of accumulation.
        Case("long_k", 64, 64, 1024, "long_k", "accumulator", why="16 K tiles into one tile"),
        Case(
            "long_k", 128, 128, 8192, "long_k", "accumulator", backends=GPU_ONLY, why="128 K tiles"
        ),
        Case(
            "cancellation",
            64,
            64,
            384,
            "long_k",
            "accumulator_dtype",
            inputs=CANCELLATION,
            why="large terms that cancel around many small ones: a float16 sum drops the "
            "small ones",
        ),
        # The file's own functions built at other tiles of the course's autotune range (M, N in
        # 64..128, K in 32..64), all three sizes different: a tile order that is right only
        # while two block sizes are equal, as at 64x64x64, shows here.
        Case(
            "tiles_128x64x32",
            130,
            100,
            70,
            "blocks",
            "block_order",
            blocks=(128, 64, 32),
            why="built at 128x64x32 tiles, with tails in M, N and K",
        ),
        Case(
            "tiles_64x128x32",
            100,
            130,
            70,
            "blocks",
            "block_order",
            blocks=(64, 128, 32),
            why="built at 64x128x32 tiles, with tails in M, N and K",
        ),
        # Properties of the kernel rather than of one product.
        Case(
            "determinism",
            96,
            80,
            144,
            "property",
            "nondeterministic",
            check=DETERMINISM,
            why="the same inputs twice give identical bits",
        ),
        Case(
            "coverage",
            100,
            70,
            90,
            "property",
            "unwritten_output",
            check=COVERAGE,
            why="every output element is written",
        ),
    ]


def hidden_cases(seed=DEFAULT_SEED, backend_name="interpreter"):
    """Random shapes keyed on the grading secret ``seed`` (HMAC-SHA256, see ``derive``):
    none a multiple of 16, so tails are everywhere."""
    rng = random.Random(derive(seed, "hidden-shapes"))
    upper = 250 if backend_name == "interpreter" else 3000
    cases = []
    for index in range(HIDDEN_COUNT):
        m, n, k = (_ragged(rng, upper) for _ in range(3))
        cases.append(
            Case(
                f"hidden_{index + 1}",
                m,
                n,
                k,
                HIDDEN,
                "tail_mask",
                points=2,
                why="a random ragged shape from the grading secret",
            )
        )
    return cases


def _ragged(rng, upper):
    while True:
        value = rng.randint(17, upper)
        if value % 16:
            return value


# --------------------------------------------------------------------------- the secret


def canonical_secret(seed):
    """The grading secret as the text every derivation keys on: a whole number in
    decimal (``--seed 2026`` and a file holding ``2026`` agree), else hex digits in
    lower case. Raises ValueError for anything else."""
    text = (
        str(seed).strip() if isinstance(seed, (int, str)) and not isinstance(seed, bool) else None
    )
    if text is not None and re.fullmatch(r"[+-]?[0-9]+", text):
        return str(int(text))
    if text is not None and re.fullmatch(r"[0-9a-fA-F]+", text):
        return text.lower()
    raise ValueError("a grading secret is a whole number or a string of hex digits")


def derive(seed, label):
    """HMAC-SHA256 of ``label`` keyed on the secret: without the key, no output of one
    label says anything of another's, nor of the key."""
    key = canonical_secret(seed).encode("ascii")
    return hmac.new(key, label.encode("utf-8"), hashlib.sha256).digest()


def fingerprint(seed):
    """What records and manifests keep instead of the secret, to tell secrets apart."""
    return derive(seed, "fingerprint").hex()[:16]


def secret_bits(seed):
    """The most an offline search has to try, in bits: 3.3 per decimal digit, 4 per hex one."""
    text = canonical_secret(seed).lstrip("+-")
    per_digit = math.log2(10) if text.isdigit() else 4
    return int(len(text) * per_digit)


def catalogue(seed=DEFAULT_SEED, backend_name="interpreter"):
    """Every case for this backend, in a stable order (the gradebook's column order)."""
    fixed = [case for case in _fixed_cases() if case.runs_on(backend_name)]
    return fixed + hidden_cases(seed, backend_name)


def all_fixed_cases():
    """Every fixed case whatever its backend: what the docs' table lists."""
    return _fixed_cases()


def other_blocks():
    """The block sizes, other than a file's own, that some case builds its kernel at."""
    return sorted({case.blocks for case in _fixed_cases() if case.blocks})


def public_cases():
    return [case for case in _fixed_cases() if case.visibility == "public"]


def interpreter_skip_reason(case):
    """Why a GPU-only case does not run here, stated rather than silent."""
    return f"{case.id} is GPU-only: too large for the Triton interpreter on a CPU"
