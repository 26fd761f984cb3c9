"""What a student who only has the handout needs to start, and what the handout leaves out.

The handout's README sets the kit up as the kit's README does on a stock machine (venv first,
then PyTorch's CPU-only build, then the kit); the container the guides send macOS and Windows
students to is in it; the staff's examples are not; and ``handout`` warns when it keeps the
answer the student guides print.
"""

import json
import pathlib
import re

import pytest

from grader.batch import cli
from grader.batch.packaging import handout
from grader.batch.status import ExitCode

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_LINE = "python3 -m venv .venv && . .venv/bin/activate"
CPU_TORCH = "python -m pip install torch --index-url https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return handout.build(tmp_path_factory.mktemp("handout"))[0]


def commands(text):
    return [line[2:].strip() for line in text.splitlines() if line.startswith("$ ")]


def test_its_readme_sets_up_a_venv_then_cpu_torch_then_the_kit(folder):
    """It said only `python -m pip install -e .`: `python: command not found` on a stock
    Debian or Ubuntu, then the multi-gigabyte CUDA build of torch without a GPU."""
    found = commands((folder / "README.md").read_text(encoding="utf-8"))
    assert found[:3] == [VENV_LINE, CPU_TORCH, "python -m pip install -e ."]


def test_it_ships_the_container_the_guides_send_macos_and_windows_students_to(folder):
    container = folder / ".devcontainer"
    for name in ("Dockerfile", "devcontainer.json"):
        assert (container / name).read_bytes() == (ROOT / ".devcontainer" / name).read_bytes()
    build = json.loads((container / "devcontainer.json").read_text(encoding="utf-8"))["build"]
    assert (container / build["context"]).resolve() == folder.resolve()
    readme = (folder / "README.md").read_text(encoding="utf-8")
    docker_build = next(line for line in commands(readme) if line.startswith("docker build"))
    assert (folder / re.search(r"-f (\S+)", docker_build)[1]).is_file()
    # The container's build is the README's set-up: the same pip lines, CPU-only torch first.
    dockerfile = (container / "Dockerfile").read_text(encoding="utf-8")
    runs = [line[4:].strip() for line in dockerfile.splitlines() if line.startswith("RUN ")]
    assert [run for run in runs if "pip install" in run] == [
        line for line in commands(readme) if "pip install" in line
    ]
    # Each guide points to the README's section on the container by its title.
    for guide in ("en", "zh"):
        text = (folder / "docs" / f"student-guide.{guide}.md").read_text(encoding="utf-8")
        assert ".devcontainer/" in text
        title = re.search(r"“?\"?(On macOS or Windows: the\s+container)", text)[1]
        assert re.search(rf"^#+ {' '.join(title.split())}$", readme, re.M), guide


def test_it_ships_the_examples_the_student_docs_run_and_no_staff_example(folder):
    staff = ROOT / "docs" / "examples" / "overrides.csv"
    assert staff.is_file(), "the instructor guide's overrides example moved: follow it here"
    shipped = {path.name for path in (folder / "docs" / "examples").iterdir()}
    assert not any(name.endswith(".csv") for name in shipped), shipped
    named = set()
    for doc in (folder / "docs").glob("*.md"):
        named |= set(re.findall(r"docs/examples/(\w+\.py)", doc.read_text(encoding="utf-8")))
    assert named and shipped == named


def test_handout_warns_when_it_keeps_the_answer(tmp_path, capsys):
    assert cli.main(["handout", "--out", str(tmp_path / "kept")]) == ExitCode.OK
    warnings = [
        line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")
    ]
    assert warnings == [f"warning: {handout.KEPT_ANSWER}"]
    assert "full marks" in handout.KEPT_ANSWER and "--answer remove" in handout.KEPT_ANSWER
    assert (
        cli.main(["handout", "--out", str(tmp_path / "cut"), "--answer", "remove"]) == ExitCode.OK
    )
    assert "warning:" not in capsys.readouterr().err
