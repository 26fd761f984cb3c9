"""The doc check: every shell command in docs/*.md and README.md runs, as a student would.

The convention, for everyone who writes docs here
--------------------------------------------------
* A command is a line that starts with ``$ `` inside a fenced code block
  (```` ``` ```` or ``~~~``). Other lines in the block are output or prose and are not
  run. A command ending in `` \\`` continues on the next line. A ``$ `` line outside a
  fence (README's CI line) counts as a command too.
* Commands run from the repository root, one ``bash -c`` each, with ``python`` and
  ``pytest`` being the interpreter that runs this check. Do not ``cd``; a later
  command of the same doc may read files an earlier one wrote.
* An HTML comment on the line(s) just before the fence (blank lines allowed)
  changes how every command of that block is checked::

      <!-- doc-check: gpu -->        needs a CUDA GPU. Without one, only the entry
                                      point's --help runs, and the test is skipped
                                      with that reason.
      <!-- doc-check: fails -->      must exit non-zero (a failing test shown on purpose).
      <!-- doc-check: skeleton -->   runs where assignment/ninetoothed_gemm.py is the
                                      untouched skeleton (what a student sees first).
      <!-- doc-check: slow -->       skipped unless NTGEMM_DOC_CHECK_SLOW=1.
      <!-- doc-check: skip reason="..." -->   never run; the reason is shown.
      <!-- doc-check: output -->     on the CPU interpreter (where the docs' outputs come
                                      from), every output line shown under a command must
                                      be a line of what it printed, in any order; ``…`` in
                                      a shown line stands for any text (a time, a path),
                                      and a ``...`` line for lines left out. So a number a
                                      command prints cannot go stale in the doc.

  Words combine: ``<!-- doc-check: skeleton fails -->``.
* Commands that ``pip install`` are never re-run: the environment running the
  check already has the packages.

Where they run: a temporary copy of the repository made of the files git knows
(tracked, plus untracked files that are not ignored, so a doc and the script it
calls are checked together before they are committed). In that copy
assignment/ninetoothed_gemm.py is replaced by the reference, as for a student who
finished the task; ``skeleton`` blocks get a second copy with the skeleton kept.
There, ``python -m grader`` and ``python -m pytest`` are forked from a process that
imported torch (and pandas and matplotlib for the grader) once, as the batch tests' are
(grader.tests.preloaded): the command runs as written, with the copy's modules, in its own
folder, environment and streams. NTGEMM_TESTS_FRESH_PROCESSES=1 starts new processes.

A command whose entry point (``python FILE.py``, ``python -m MODULE``) is not in
the repository yet is skipped with that reason, and so is a pytest run that
collects no test (exit 5); set NTGEMM_DOC_CHECK_STRICT=1 to fail on those instead.
A command that appears in two docs (the zh and en guides share theirs) runs once per
copy, and both places are judged on that run; one that appears twice in one doc runs
again, since the doc then shows what running it again does (a resume, say).
"""

import dataclasses
import importlib.util
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from grader.core import backend as backends
from grader.tests import preloaded
from grader.tests.batch_helpers import FRESH_PROCESSES

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = pathlib.PurePosixPath("solutions/ninetoothed_gemm.py")
SKELETON = pathlib.PurePosixPath("assignment/ninetoothed_gemm.py")
NESTED = "NTGEMM_DOC_CHECK_NESTED"
SLOW = os.environ.get("NTGEMM_DOC_CHECK_SLOW") == "1"
STRICT = os.environ.get("NTGEMM_DOC_CHECK_STRICT") == "1"
TIMEOUT_S = 600
KNOWN_WORDS = {"gpu", "fails", "skeleton", "slow", "skip", "output"}
ANY_TEXT, LEFT_OUT = "…", "..."  # in the output shown under a command

if os.environ.get(NESTED):
    pytest.skip(
        "a doc command is running the kit's tests: the doc check does not run inside itself",
        allow_module_level=True,
    )

FENCE = re.compile(r"^\s*(```|~~~)")
ANNOTATION = re.compile(r"^\s*<!--\s*doc-check:(?P<body>.*?)-->\s*$")
OTHER_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
SKIP_REASON = re.compile(r'skip\s+reason="(?P<reason>[^"]*)"')
PIP_INSTALL = re.compile(r"\bpip3?\s+install\b")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclasses.dataclass(frozen=True)
class Command:
    doc: str  # path relative to the repository root
    line: int  # 1-based line of the `$ ` line
    text: str  # the command, without `$ `
    words: frozenset = frozenset()
    skip_reason: str = ""
    problem: str = ""  # a malformed annotation: reported as a failure
    shown: tuple = ()  # the output lines the doc shows under it, in its block

    @property
    def id(self):
        return f"{self.doc}:{self.line}"


def parse_annotation(body):
    reason = ""
    match = SKIP_REASON.search(body)
    if match:
        reason = match.group("reason").strip()
        body = body[: match.start()] + " skip " + body[match.end() :]
    words = frozenset(body.split())
    problem = ""
    unknown = words - KNOWN_WORDS
    if unknown:
        problem = f"unknown doc-check word(s) {sorted(unknown)}; known: {sorted(KNOWN_WORDS)}"
    elif "skip" in words and not reason:
        problem = 'doc-check skip needs a reason: <!-- doc-check: skip reason="..." -->'
    return words, reason, problem


def commands_in(path, root=ROOT):
    """The commands of one markdown file, with the annotation that governs each."""
    doc = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    in_fence = False
    block_start = 0  # the line of the fence that opened the current block
    pending = []  # annotation bodies seen since the last non-blank line of prose
    block = (frozenset(), "", "")  # words, skip reason, problem
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 1
        index += 1
        if FENCE.match(line):
            if not in_fence:
                block = _merge(pending)
                block_start = number
            in_fence = not in_fence
            pending = []
            continue
        annotation = ANNOTATION.match(line)
        if not in_fence and annotation:
            pending.append(annotation.group("body"))
            continue
        if line.startswith("$ "):
            text = line[2:].strip()
            while text.endswith("\\") and index < len(lines):
                text = text[:-1].rstrip() + " " + lines[index].strip()
                index += 1
            words, reason, problem = block if in_fence else _merge(pending)
            found.append(Command(doc, number, text, words, reason, problem))
            if not in_fence:
                pending = []
            continue
        if in_fence and found and found[-1].line > block_start:
            found[-1] = dataclasses.replace(found[-1], shown=found[-1].shown + (line,))
            continue
        if not in_fence and line.strip() and not OTHER_COMMENT.match(line):
            pending = []
    return found


def _merge(bodies):
    words, reasons, problems = set(), [], []
    for body in bodies:
        more, reason, problem = parse_annotation(body)
        words |= more
        reasons += [reason] if reason else []
        problems += [problem] if problem else []
    return frozenset(words), "; ".join(reasons), "; ".join(problems)


def documents():
    docs = sorted((ROOT / "docs").glob("*.md"))
    readme = ROOT / "README.md"
    return docs + ([readme] if readme.is_file() else [])


ALL_COMMANDS = [command for path in documents() for command in commands_in(path)]


# --- the copies of the repository the commands run in -------------------------------


def repository_files():
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the doc check copies the files git knows")
    return sorted({name for name in listing.split("\0") if name and (ROOT / name).is_file()})


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory):
    """Copies of the repository by state, made on first use: 'finished' and 'skeleton'."""
    made = {}

    def get(state):
        if state not in made:
            target = tmp_path_factory.mktemp(f"doc-check-{state}") / "repo"
            for name in repository_files():
                destination = target / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, destination)
            if state == "finished":
                shutil.copy2(ROOT / REFERENCE, target / SKELETON)
            made[state] = target
        return made[state]

    return get


def command_env():
    """The commands' environment: ``python`` is this interpreter, and ``python -m grader`` and
    ``python -m pytest`` are forked from a process that made their imports once
    (grader.tests.preloaded.shim_environment), unless NTGEMM_TESTS_FRESH_PROCESSES is set."""
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env[NESTED] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    return env if os.environ.get(FRESH_PROCESSES) else preloaded.shim_environment(env)


# --- entry points --------------------------------------------------------------------


def entry_point(text):
    """('script', 'x.py') / ('module', 'a.b') / ('pytest', '') of a simple command, else None."""
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    if any(word in {"&&", "||", "|", ";"} for word in words):
        return None
    while words and ENV_ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return None
    if words[0] in {"pytest", "py.test"}:
        return ("pytest", "")
    if not re.fullmatch(r"python3?(\.\d+)?", words[0]) or len(words) < 2:
        return None
    if words[1] == "-m" and len(words) > 2:
        return ("pytest", "") if words[2] == "pytest" else ("module", words[2])
    if words[1].endswith(".py"):
        return ("script", words[1])
    return None


def entry_exists(kind, name, checkout):
    if kind == "script":
        return (checkout / name).is_file()
    if kind == "module":
        local = checkout / pathlib.Path(*name.split("."))
        if local.with_suffix(".py").is_file() or (local / "__main__.py").is_file():
            return True
        if (checkout / name.split(".")[0]).is_dir():
            return False  # one of the kit's packages, without that module yet
        return importlib.util.find_spec(name) is not None
    return True


def help_command(kind, name):
    python = shlex.quote(sys.executable)
    if kind == "script":
        return f"{python} {shlex.quote(name)} --help"
    return f"{python} -m {shlex.quote(name)} --help"


def not_there_yet(reason):
    if STRICT:
        pytest.fail(f"{reason} (NTGEMM_DOC_CHECK_STRICT=1)", pytrace=False)
    pytest.skip(f"{reason}; the doc check will run it once it exists")


_RESULTS = {}  # (checkout state, command) -> (the doc that ran it, CompletedProcess)


def run(text, checkout):
    return subprocess.run(
        ["bash", "-c", text],
        cwd=checkout,
        env=command_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def unprinted(shown, printed):
    """The lines of ``shown`` that no line of ``printed`` matches (see ``output``)."""
    lines = [line.rstrip() for line in printed.splitlines()]
    missing = []
    for line in shown:
        if not line.strip() or line.strip() == LEFT_OUT:
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.rstrip().split(ANY_TEXT)))
        if not any(pattern.fullmatch(candidate) for candidate in lines):
            missing.append(line)
    return missing


def transcript(command, result):
    output = (result.stdout + result.stderr).strip().splitlines()
    tail = "\n".join(output[-40:])
    return f"$ {command.text}\n(exit {result.returncode}, in {command.id})\n{tail}"


# --- the check -------------------------------------------------------------------------


def test_the_docs_have_commands():
    """Guards the parser: the student guide alone has several."""
    assert any(command.doc.startswith("docs/student-guide") for command in ALL_COMMANDS)


def test_the_convention_is_read_as_documented(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "\n".join(
            [
                "Prose, then a plain block:",
                "```",
                "$ echo one",
                "output, not run",
                "```",
                "<!-- doc-check: skeleton fails -->",
                "",
                "~~~",
                "$ python -m pytest assignment \\",
                "    -k tail",
                "~~~",
                '<!-- doc-check: skip reason="needs the class folder" -->',
                "```",
                "$ python -m grader grade class/ --out out/",
                "```",
                "<!-- doc-check: gpus -->",
                "```",
                "$ true",
                "```",
                "<!-- ci: test command -->",
                "$ python -m pip install -e .",
            ]
        ),
        encoding="utf-8",
    )
    found = commands_in(doc, root=tmp_path)
    assert [(command.line, command.text) for command in found] == [
        (3, "echo one"),
        (9, "python -m pytest assignment -k tail"),
        (14, "python -m grader grade class/ --out out/"),
        (18, "true"),
        (21, "python -m pip install -e ."),
    ]
    assert found[0].words == frozenset() and found[0].shown == ("output, not run",)
    assert found[1].words == {"skeleton", "fails"} and found[1].shown == ()
    assert found[2].words == {"skip"} and found[2].skip_reason == "needs the class folder"
    assert "unknown doc-check word" in found[3].problem
    assert found[4].words == frozenset() and found[0].id == "doc.md:3"
    assert entry_point(found[1].text) == ("pytest", "")
    assert entry_point("NTGEMM_BACKEND=interpreter python docs/examples/x.py --k 3") == (
        "script",
        "docs/examples/x.py",
    )
    assert entry_point("python -m benchmarks.lessons.ledger --sweep") == (
        "module",
        "benchmarks.lessons.ledger",
    )


def test_shown_output_is_matched_line_by_line_with_gaps_and_any_text():
    printed = "ntgemm grader: 2 submission(s)\n  ben: failed 3/28 (17.4 s)\n  ada: passed 28/28 (26.5 s)\n"
    assert (
        unprinted(["  ada: passed 28/28 (… s)", "...", "  ben: failed 3/28 (… s)"], printed) == []
    )
    assert unprinted(["  ada: passed 27/28 (… s)", "ntgemm grader: …"], printed) == [
        "  ada: passed 27/28 (… s)"
    ]
    assert unprinted(["ntgemm grader"], printed) == ["ntgemm grader"]  # whole lines only


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda command: command.id)
def test_doc_command(command, checkouts, backend):
    if command.problem:
        pytest.fail(f"{command.id}: {command.problem}", pytrace=False)
    if "skip" in command.words:
        pytest.skip(f"marked skip in the doc: {command.skip_reason}")
    if PIP_INSTALL.search(command.text):
        pytest.skip(
            "installs packages: not re-run, the environment running the check already has them"
        )
    if "slow" in command.words and not SLOW:
        pytest.skip("marked slow in the doc: set NTGEMM_DOC_CHECK_SLOW=1 to run it")

    checkout = checkouts("skeleton" if "skeleton" in command.words else "finished")
    entry = entry_point(command.text)
    if entry and not entry_exists(*entry, checkout):
        not_there_yet(f"entry point {entry[1]} is not in the repository yet")

    if "gpu" in command.words and backend.name != "gpu":
        if entry is None or entry[0] == "pytest":
            pytest.skip("needs a GPU; this machine has none, so nothing was run")
        result = run(help_command(*entry), checkout)
        if result.returncode != 0:
            pytest.fail("--help failed:\n" + transcript(command, result), pytrace=False)
        pytest.skip(f"needs a GPU; on this CPU only `{entry[1]} --help` ran, and it works")

    interpreter = backend.name == "interpreter" or "NTGEMM_BACKEND=interpreter" in command.text
    problem = interpreter and backends.interpreter_problem()
    if problem:
        pytest.skip(
            f"the interpreter cannot run on this machine, as the command would say: {problem}"
        )

    state = "skeleton" if "skeleton" in command.words else "finished"
    ran = _RESULTS.get((state, command.text))
    if ran is None or ran[0] == command.doc:  # the zh and en guides share commands
        ran = _RESULTS[(state, command.text)] = (command.doc, run(command.text, checkout))
    result = ran[1]
    if result.returncode == 5 and entry and entry[0] == "pytest":
        not_there_yet("pytest collected no test here")
    if "fails" in command.words and result.returncode == 0:
        pytest.fail(
            "expected to fail, but it passed:\n" + transcript(command, result), pytrace=False
        )
    if "fails" not in command.words and result.returncode != 0:
        pytest.fail(transcript(command, result), pytrace=False)
    if "output" in command.words and backend.name == "interpreter":
        missing = unprinted(command.shown, result.stdout + result.stderr)
        if missing:
            pytest.fail(
                "the doc shows output this command no longer prints (update the doc "
                "from the run):\n" + "\n".join(missing) + "\n\n" + transcript(command, result),
                pytrace=False,
            )
