"""The set-up on a stock Debian or Ubuntu: ``python3`` but no ``python`` command, and a pip that
refuses to install outside a virtual environment (PEP 668). The README and both student guides
start their set-up by making a venv and entering it, and after that line ``python`` is the
venv's: the lines after it (``python -m pip install ...``) then work as written."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_LINE = "python3 -m venv .venv && . .venv/bin/activate"
CPU_TORCH = "python -m pip install torch --index-url https://download.pytorch.org/whl/cpu"
# Each doc's set-up section: from its heading to the next heading of the same level.
SET_UP = {
    "README.md": "## Set up and run",
    "docs/student-guide.en.md": "## 1. Set up",
    "docs/student-guide.zh.md": "## 1. 准备环境",
}


def set_up_commands(doc):
    """The ``$ `` commands of ``doc``'s set-up section, in order."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    section = text.split(SET_UP[doc] + "\n", 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.M)[0]
    return [line[2:].strip() for line in section.splitlines() if line.startswith("$ ")]


@pytest.mark.parametrize("doc", sorted(SET_UP))
def test_the_set_up_makes_a_venv_before_any_python_command(doc):
    commands = set_up_commands(doc)
    assert commands[0] == VENV_LINE, f"{doc} starts its set-up with {commands[0]!r}"
    installs = [command for command in commands if "pip install" in command]
    assert installs[0] == CPU_TORCH, doc
    assert any(command.startswith("python -m pip install -e .") for command in installs), doc
    assert not any(re.match(r"(sudo )?(pip3?|python3) ", command) for command in commands[1:]), (
        f"{doc}: after the venv line, `python` is the venv's: no command needs python3 or pip"
    )


def stock_python(folder):
    """A folder holding only ``python3``, this machine's Python outside any venv, as on a stock
    Debian or Ubuntu: no ``python``, no ``pip``."""
    base = pathlib.Path(sys.base_prefix) / "bin"
    real = next(
        path
        for path in (base / "python3", base / f"python3.{sys.version_info[1]}")
        if path.is_file()
    )
    folder.mkdir()
    wrapper = folder / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    return folder


def test_after_the_readmes_first_line_python_and_its_pip_are_the_venvs(tmp_path):
    """The README began with ``python -m pip install``: ``python: command not found`` there."""
    first = set_up_commands("README.md")[0]
    script = (
        f"{first} && command -v python && python -m pip --version && "
        "python -c 'import sys; print(sys.prefix != sys.base_prefix)'"
    )
    bin_dir = stock_python(tmp_path / "bin")
    result = subprocess.run(
        ["/bin/bash", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": str(bin_dir),
            "HOME": str(tmp_path),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    python, pip, in_venv = result.stdout.splitlines()[-3:]
    venv = tmp_path / ".venv"
    assert pathlib.Path(python) == venv / "bin" / "python"
    assert f"from {venv}" in pip and in_venv == "True"
