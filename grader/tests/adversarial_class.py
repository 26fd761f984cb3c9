"""The hostile class of test_batch_adversarial: the model answer with an attack in nt_gemm's
kernel call or appended as module code (which runs at import, after nt_gemm is defined).

Each attack misbehaves in its whole-file run or at import; the kernel the grader rebuilds
from arrangement() and application() is the reference's (patch_allclose's assigns its
accumulator: a wrong kernel behind patched comparisons).
The status each must get is in the test. ``python -m grader.tests.adversarial_class FOLDER``
writes the class.
"""

from grader.tests.build_variants import DOT, RETURN
from grader.tests.source_edits import Variant, appended, class_command

LAUNCH = "_kernel()(lhs, rhs, output)"


def _call(*lines):
    """An edit: nt_gemm's launch and return replaced by ``lines`` (at its indentation)."""
    return RETURN, "".join(f"    {line}\n" for line in lines)


def _before_launch(line):
    """An edit: ``line`` run in nt_gemm just before its kernel launches."""
    return _call(line, LAUNCH, "return output")


FORGE = """
def _forge():
    import json
    import pathlib
    fake = json.dumps({"score": 999, "tests": []})
    row = "student,score,max_score,status,flags\\nforge_reports,999,27,passed,\\n"
    places = [pathlib.Path("."), pathlib.Path(".."), pathlib.Path("../.."),
              pathlib.Path.home(), pathlib.Path(__file__).resolve().parent,
              pathlib.Path(__file__).resolve().parent.parent]
    for place in places:
        for name, text in (("results.json", fake), ("gradebook.csv", row), ("worker.json", "{}")):
            try:
                (place / name).write_text(text)
            except OSError:
                pass
        try:
            (place / "forge_reports").mkdir(exist_ok=True)
            (place / "forge_reports" / "results.json").write_text(fake)
        except OSError:
            pass


_forge()
"""

VANDALISE = """
def _vandalise():
    import glob
    import os
    import pathlib
    bad = "def nt_gemm(lhs, rhs):\\n    return None\\n"
    targets = set()
    # Relative guesses only: from the run's private folder these stay inside the
    # grader's own temporary folder, so the test never touches anything else.
    for pattern in ("../*/ninetoothed_gemm.py", "../*/*/ninetoothed_gemm.py",
                    "../../*/*/ninetoothed_gemm.py", "../../*/*/*/ninetoothed_gemm.py",
                    os.path.join(os.path.dirname(os.environ.get("TMPDIR", ".")), "*",
                                 "ninetoothed_gemm.py")):
        targets.update(glob.glob(pattern))
    for target in sorted(targets):
        if os.path.samefile(target, __file__):
            continue  # only the neighbours
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o600)
            pathlib.Path(target).write_text(bad)
        except OSError:
            pass


_vandalise()
"""

PATCH_COMPARISONS = """
import sys

import torch

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
for _name, _module in list(sys.modules.items()):
    if _name.startswith('grader') and hasattr(_module, 'compare'):
        _module.compare = lambda *args, **kwargs: None
"""

HANG = """
import time

while True:
    time.sleep(0.05)
"""

ATTACKS = {
    "hang_at_import": Variant("never finishes importing (expected: timeout)", (appended(HANG),)),
    "hang_in_call": Variant(
        "nt_gemm spins forever (expected: timeout)", (_call(LAUNCH, "while True:", "    pass"),)
    ),
    "segfault": Variant(
        "reads address 0 through ctypes (expected: crashed, SIGSEGV)",
        (_call(LAUNCH, "import ctypes", "ctypes.string_at(0)", "return output"),),
    ),
    "exit_os": Variant(
        "ends the process with status 0 on the first call (expected: crashed)",
        (_call(LAUNCH, "os._exit(0)"),),
    ),
    "exit_sys": Variant(
        "calls sys.exit(0) in nt_gemm (expected: crashed)",
        (_call(LAUNCH, "import sys", "sys.exit(0)"),),
    ),
    "memory_hog": Variant(
        "touches 2 GiB of host memory (expected: memory_limit under a 1 GiB "
        "limit; 12 GiB is caught the same way under the default 8 GiB)",
        (
            _call(
                LAUNCH,
                "hoard = torch.ones(1 << 30, dtype=torch.float16)",
                "hoard += 1",
                "return output",
            ),
        ),
    ),
    "memory_error": Variant(
        "raises MemoryError from nt_gemm (expected: failed, not memory_limit: "
        "the limit is what the grader observes, never what the submission "
        "says)",
        (_call(LAUNCH, "raise MemoryError('simulated')"),),
    ),
    "patch_allclose": Variant(
        "a wrong kernel (accumulator assigned) that patches every "
        "comparison it can reach (expected: failed: the patches live in "
        "a process whose outputs earn nothing)",
        ((DOT, DOT.replace("+=", "=")), appended(PATCH_COMPARISONS)),
    ),
    "forge_reports": Variant(
        "a correct kernel that writes fake results.json and gradebook.csv "
        "everywhere it can reach, at import and on every call (expected: "
        "passed; nothing forged lands in the output folder)",
        (_before_launch("_forge()"), appended(FORGE)),
    ),
    "overwrite_neighbours": Variant(
        "a correct kernel that tries to overwrite every "
        "ninetoothed_gemm.py it can find (expected: passed; "
        "neighbours unaffected)",
        (_before_launch("_vandalise()"), appended(VANDALISE)),
    ),
    "cheat_einsum": Variant(
        "returns torch.einsum's product without launching the kernel (expected: flagged)",
        (_call("return torch.einsum('mk,kn->mn', lhs, rhs)"),),
    ),
    "cheat_overwrite": Variant(
        "launches the kernel, then overwrites its output with matmul's (expected: flagged)",
        (_call(LAUNCH, "output.copy_(lhs @ rhs)", "return output"),),
    ),
    "cheat_elementwise": Variant(
        "computes C with broadcasting and a sum, no kernel (expected: flagged)",
        (_call("return (lhs[:, :, None].float() * rhs[None, :, :].float()).sum(1).half()"),),
    ),
    "raises_in_call": Variant(
        "nt_gemm raises on every call (expected: failed, each case showing the error)",
        (_call("raise RuntimeError('my kernel is not ready')"),),
    ),
    "missing_name": Variant(
        "lacks nt_gemm (expected: import_error naming it)", (("def nt_gemm(", "def my_gemm("),)
    ),
}


if __name__ == "__main__":
    class_command(ATTACKS, "grader.tests.adversarial_class", "the hostile submissions")
