"""The laptop path: the container's build is the README's set-up, and the student guides say,
in both languages, which systems the kit runs on and how. Docker is not needed to check it."""

import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTAINER = ROOT / ".devcontainer"
SET_UP_MARKER = "<!-- container: set-up -->"
CPU_TORCH = "download.pytorch.org/whl/cpu"


def readme_set_up():
    """The README's set-up, in order: the command of the block under its set-up marker (the
    CPU-only torch), then the install that begins its main job (``... && grade``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```\w*\n(.*?)```", readme.split(SET_UP_MARKER, 1)[1], re.S).group(1)
    commands = [line[2:].strip() for line in block.splitlines() if line.startswith("$ ")]
    main_job = re.search(r"^\$ (.*) && python -m grader grade grader/demo_class", readme, re.M)
    return commands + [main_job.group(1)]


def dockerfile_runs():
    """The Dockerfile's RUN commands, continuation lines joined."""
    text = (CONTAINER / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    return [line[4:].strip() for line in text.splitlines() if line.startswith("RUN ")]


def test_the_container_builds_with_the_readmes_set_up_cpu_torch_first():
    set_up = readme_set_up()
    assert CPU_TORCH in set_up[0] and set_up[-1] == "python -m pip install -e ."
    assert [run for run in dockerfile_runs() if "pip install" in run] == set_up


def test_devcontainer_json_builds_that_dockerfile():
    config = json.loads((CONTAINER / "devcontainer.json").read_text(encoding="utf-8"))
    build = config["build"]
    assert (CONTAINER / build["dockerfile"]).resolve() == (CONTAINER / "Dockerfile").resolve()
    assert (CONTAINER / build["context"]).resolve() == ROOT
    # The Dockerfile installs the kit where the working copy is mounted.
    workdir = re.search(r"^WORKDIR (\S+)", (CONTAINER / "Dockerfile").read_text(), re.M)[1]
    assert config["workspaceFolder"] == workdir


def test_both_student_guides_name_the_systems_and_the_cpu_torch():
    cpu_torch = readme_set_up()[0]
    for guide, words in (("en", ("container", "skip this line")), ("zh", ("容器", "跳过这一行"))):
        text = (ROOT / "docs" / f"student-guide.{guide}.md").read_text(encoding="utf-8")
        for name in ("Linux", "macOS", "Windows", "WSL2", ".devcontainer/", *words):
            assert name in text, (guide, name)
        assert f"$ {cpu_torch}" in text, guide
