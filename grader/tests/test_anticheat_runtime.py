"""The runtime monitor against cheats that use no tamper construct, and honest wrappers.

Each cheat below passed the batch grader with a kernel that writes only zeros:
the right answer, computed without a matrix product (``mul`` then ``sum``), was
slipped in after the launch through a write that does not bump the version
counter, handed to a launch as an input or next to a zero-size output, or
"launched" through a kernel handle NineToothed never built. The monitor runs in
a child process, as in the batch grader, so its patches stay out of this one.
"""

import json
import os
import subprocess
import sys
import textwrap

from grader import anticheat
from grader.tests.batch_helpers import ROOT

KERNEL = '''
import functools

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

BLOCK_SIZE_M = BLOCK_SIZE_N = BLOCK_SIZE_K = 16


def arrangement(lhs, rhs, output):
    output_arranged = output.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    grid_m, grid_n = output_arranged.shape
    lhs_arranged = lhs.tile((BLOCK_SIZE_M, BLOCK_SIZE_K)).tile((1, -1)).expand((-1, grid_n))
    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)
    rhs_arranged = rhs.tile((BLOCK_SIZE_K, BLOCK_SIZE_N)).tile((-1, 1)).expand((grid_m, -1))
    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)
    return lhs_arranged, rhs_arranged, output_arranged


def application(lhs, rhs, output):
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    {loop}
    output = accumulator


@functools.cache
def _kernel():
    return ninetoothed.make(arrangement, application, (Tensor(2), Tensor(2), Tensor(2)))


def _answer(lhs, rhs):
    return (lhs[:, :, None].float() * rhs[None, :, :].float()).sum(1).half()


def _empty(lhs, rhs, rows=0, cols=0):
    return torch.empty((lhs.shape[0] + rows, rhs.shape[1] + cols), dtype=torch.float16)
'''
BROKEN = KERNEL.replace("{loop}", "pass")
SILENT = KERNEL.replace("{loop}", "pass").replace("    output = accumulator\n", "")  # writes nothing
PREFILLED = {
    "prefilled": """
        out = _answer(lhs, rhs)
        _kernel()(lhs, rhs, out)
        return out""",
}
CORRECT = KERNEL.replace("{loop}", "for k in range(lhs.shape[0]):\n"
                         "        accumulator += ntl.dot(lhs[k], rhs[k])")

CHEATS = {
    "data_copy": """
        out = _empty(lhs, rhs)
        _kernel()(lhs, rhs, out)
        out.data.copy_(_answer(lhs, rhs))
        return out""",
    "storage_copy": """
        out = _empty(lhs, rhs)
        _kernel()(lhs, rhs, out)
        out.untyped_storage().copy_(_answer(lhs, rhs).untyped_storage())
        return out""",
    "numpy_view": """
        out = _empty(lhs, rhs)
        _kernel()(lhs, rhs, out)
        out.numpy()[...] = _answer(lhs, rhs).numpy()
        return out""",
    "answer_as_input": """
        out = _answer(lhs, rhs)
        _kernel()(out, torch.ones((out.shape[1], 1), dtype=torch.float16), _empty(lhs, rhs)[:, :1])
        return out""",
    "zero_size_launch": """
        out = _answer(lhs, rhs)
        _kernel()(lhs, rhs, out[:0])
        return out""",
    "forged_handle": """
        out = _empty(lhs, rhs)
        type(_kernel())(None, lambda a, b, c: c.copy_(torch.mm(a, b)), None)(lhs, rhs, out)
        return out""",
    "swapped_launcher": """
        out = _empty(lhs, rhs)
        handle = _kernel()
        handle._launch = lambda a, b, c: c.copy_(torch.mm(a, b))
        handle(lhs, rhs, out)
        return out""",
}
HONEST = {
    "plain": """
        out = _empty(lhs, rhs)
        _kernel()(lhs, rhs, out)
        return out""",
    "padded_then_sliced": """
        out = torch.zeros((lhs.shape[0] + 7, rhs.shape[1] + 5), dtype=torch.float16)
        _kernel()(lhs, rhs, out[:lhs.shape[0], :rhs.shape[1]])
        return out[:lhs.shape[0], :rhs.shape[1]]""",
    "in_row_chunks": """
        out = _empty(lhs, rhs)
        for start in range(0, lhs.shape[0], 16):
            _kernel()(lhs[start:start + 16], rhs, out[start:start + 16])
        return out""",
    "launched_twice_transposed": """
        out = _empty(rhs.T, lhs.T).t()
        _kernel()(lhs, rhs, out)
        _kernel()(lhs, rhs, out)
        return out""",
}

RUNNER = '''
import json, pathlib, sys
from grader import backend
backend.activate()
import torch
from grader import anticheat
from grader.loading import load_submission

monitor = anticheat.Monitor()
monitor.install()
lhs = torch.randn(40, 24).half()
rhs = torch.randn(24, 33).half()
report = {}
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    module = load_submission(path)
    result, evidence = monitor.traced(module.nt_gemm)(lhs, rhs)
    right = bool(torch.allclose(result.float(), lhs.float() @ rhs.float(), atol=0.05, rtol=0.05))
    report[path.stem] = {"evidence": evidence, "right": right}
print(json.dumps(report))
'''


def _write(folder, kernel, bodies):
    for name, body in bodies.items():
        wrapper = "\n\ndef nt_gemm(lhs, rhs):" + textwrap.indent(textwrap.dedent(body), "    ")
        (folder / f"{name}.py").write_text(kernel + wrapper + "\n", encoding="utf-8")


def test_cheats_without_tamper_constructs_are_caught_and_honest_wrappers_are_not(tmp_path):
    _write(tmp_path, BROKEN, CHEATS)
    _write(tmp_path, CORRECT, HONEST)
    _write(tmp_path, SILENT, PREFILLED)
    for name in CHEATS:  # nothing for the static scan to go on but a stray torch.mm
        source = (tmp_path / f"{name}.py").read_text()
        kinds = {finding.kind for finding in anticheat.scan_source(source)}
        assert kinds <= {"compute"}, (name, kinds)
    result = subprocess.run([sys.executable, "-c", RUNNER, str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NTGEMM_BACKEND": "interpreter",
                                 "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for name in CHEATS:
        assert report[name]["right"], name  # the answer is right: only the evidence can tell
        assert report[name]["evidence"], name
    for name in HONEST:
        assert report[name] == {"evidence": [], "right": True}, name
    # The answer put in the output before a launch that writes nothing: the monitor
    # fills every launch's output with NaN first, so the result is wrong.
    assert not report["prefilled"]["right"]
