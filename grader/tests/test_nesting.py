"""A file nested too deep for the grader's own reading (grader.core.nesting) is its student's
``failed`` row, with the line and why, in the batch, the pytest grader and on Gradescope;
the deepest file it lets through is one every reading of the grader's process walks."""

import ast
import copy
import json
import pathlib

import pytest

from grader.core import kernel_source, loading, messages, nesting, source_mistakes
from grader.tests.batch_helpers import ROOT, gradebook, run_grader, run_pytest
from grader.tests.source_edits import Variant, appended, model_answer, replace_once

# The zip, built once for this module, as test_gradescope builds it for its own.
from grader.tests.test_gradescope import autograder, check_results, grade_in_tree  # noqa: F401

KERNEL_LINE = "    output = accumulator  # noqa"


def chain(terms):
    return " + ".join(["1"] * terms)


def nested_blocks(pairs, innermost):
    """A helper of ``pairs`` functions each holding an ``if``, one inside another."""
    lines = []
    for level in range(pairs):
        lines += [
            "    " * 2 * level + f"def helper_{level}(a):",
            "    " * (2 * level + 1) + "if a:",
        ]
    return "\n".join(lines + ["    " * 2 * pairs + innermost])


INNERMOST = "return a" + " + (a" * 15 + ")" * 15
ARRANGEMENT_LINE = "    return lhs_arranged, rhs_arranged, output_arranged"


def at_module_end(what, line):
    """(the variant with ``line`` added at the end of the module, ``line``)."""
    return Variant(what, (appended(line),)), line


def before(anchor, line):
    """An edit: ``line`` in a function, just before ``anchor``, one of its lines."""
    return (anchor, f"    {line}\n{anchor}")


def in_function(what, line, anchor=KERNEL_LINE):
    """(the variant with ``line`` before ``anchor``: in application() by default, ``line``)."""
    return Variant(what, (before(anchor, line),)), line


# name -> (the variant, the text of the line that goes past the limit)
DEEP = {
    # The file: 16 KB, on which Python's own compiler gives up.
    "chain": at_module_end("a constant X = 1 + 1 + ... + 1 of 4000 terms", f"X = {chain(4000)}"),
    # The old kernel check's recursion gave out at about 600 terms.
    "kernel_chain": in_function("600 terms added up in application()", f"scale = {chain(600)}"),
    "brackets": in_function(
        "lists 150 deep in arrangement()", f"nested = {'[' * 150}1{']' * 150}", ARRANGEMENT_LINE
    ),
    "calls": in_function(
        "abs(abs(...)) 150 deep in application()", f"scale = {'abs(' * 150}1{')' * 150}"
    ),
    "blocks": (
        Variant(
            "45 functions, each with an if, inside one another",
            (appended(nested_blocks(45, INNERMOST)),),
        ),
        INNERMOST,
    ),
    # Shapes on which Python's parser gives up before any tree: a power chain, lambdas.
    "power": at_module_end("a 3000-term power chain", "Y = " + " ** ".join(["2"] * 3000)),
    "lambdas": at_module_end("3000 lambdas inside one another", "F = " + "lambda: " * 3000 + "1"),
}


def line_of(source, text):
    lines = source.splitlines()
    assert [line.strip() for line in lines].count(text) == 1
    return [line.strip() for line in lines].index(text) + 1


def deep_source(name):
    return DEEP[name][0].source(name)


@pytest.mark.parametrize("name", list(DEEP))
def test_a_deep_file_is_refused_at_its_line(name):
    source = deep_source(name)
    error = nesting.too_deep(source)
    assert error is not None and error.lineno == line_of(source, DEEP[name][1])
    shown = nesting.message(error, "ninetoothed_gemm.py")
    assert shown.startswith(
        f"ninetoothed_gemm.py, line {error.lineno}: the code there nests "
        f"more than {nesting.LIMIT} levels deep"
    )
    assert (
        f"ninetoothed_gemm.py 第 {error.lineno} 行：这里的代码嵌套超过了 {nesting.LIMIT} 层"
        in messages.chinese(shown)
    )
    # Every reading of the file says so, or nothing, and none of them gives up.
    for read in (kernel_source.extract, kernel_source.defined_names, loading.unfinished_functions):
        with pytest.raises(nesting.TooDeep):
            read(source)
    assert source_mistakes.inspect_source(source) == []


def test_the_limit_is_what_it_says():
    """A unary chain under one assignment: the module, the assignment, then one level per sign."""
    assert nesting.too_deep("X = " + "-" * (nesting.LIMIT - 2) + "1") is None
    assert nesting.too_deep("X = " + "-" * (nesting.LIMIT - 1) + "1").lineno == 1


def test_no_file_of_the_kit_comes_near_the_limit(monkeypatch):
    """The reference, the demo class, the skeleton and every other Python file of the kit
    pass at half the limit."""
    files = [
        path
        for folder in ("assignment", "solutions", "grader", "benchmarks", "docs")
        for path in (ROOT / folder).rglob("*.py")
    ]
    assert len(files) > 100
    monkeypatch.setattr(nesting, "LIMIT", nesting.LIMIT // 2)
    assert [path for path in files if nesting.too_deep(loading.read_source(path))] == []


def test_the_guides_state_the_limit():
    guides = {
        name: (ROOT / "docs" / name).read_text(encoding="utf-8")
        for name in ("student-guide.en.md", "student-guide.zh.md", "instructor-reference.md")
    }
    assert (
        f"read none nested more than {nesting.LIMIT} levels deep" in guides["student-guide.en.md"]
    )
    assert f"嵌套超过 {nesting.LIMIT} 层的文件一概不读" in guides["student-guide.zh.md"]
    assert f"nested more than {nesting.LIMIT} syntax-tree levels deep" in guides[
        "instructor-reference.md"
    ].replace("\n   ", " ")


def deepest_kernel():
    """The model answer with the longest chain in application() that the check lets through."""

    def with_chain(terms):
        return replace_once(model_answer(), *before(KERNEL_LINE, f"scale = {chain(terms)}"))

    terms = 2
    while nesting.too_deep(with_chain(terms + 1)) is None:
        terms += 1
    return with_chain(terms)


def below(frames, work):
    """``work()`` run with ``frames`` more frames on the stack, as a grader's caller has."""
    return below(frames - 1, work) if frames else work()


def test_every_reading_walks_the_deepest_file_let_through():
    source = deepest_kernel()
    tree = nesting.parse(source)

    def read():
        rebuilt = kernel_source.extract(source)
        assert rebuilt.ok, rebuilt.violations
        kernel_source.defined_names(source)
        loading.unfinished_functions(source)
        source_mistakes.inspect_source(source)
        ast.unparse(copy.deepcopy(tree))
        compile(source, "ninetoothed_gemm.py", "exec")

    below(150, read)


DEEP_CLASS = ("chain", "brackets", "blocks", "power")


def test_the_batch_fails_each_deep_file_on_its_own_row(tmp_path):
    folder = tmp_path / "class"
    for name in DEEP_CLASS:
        (folder / name).mkdir(parents=True)
        (folder / name / "ninetoothed_gemm.py").write_text(deep_source(name), encoding="utf-8")
    out = tmp_path / "out"
    done = run_grader(
        tmp_path,
        "grade",
        str(folder),
        "--out",
        str(out),
        "--no-progress",
        "--no-speed",
        "--cases",
        "square-64x64x64",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = gradebook(out)
    assert sorted(rows) == sorted(DEEP_CLASS)
    for name in DEEP_CLASS:
        line = line_of(deep_source(name), DEEP[name][1])
        record = json.loads((out / name / "results.json").read_text(encoding="utf-8"))
        assert rows[name]["status"] == "failed" and float(rows[name]["score"]) == 0
        assert record["extra_data"]["status"] == "failed"
        assert (
            f"ninetoothed_gemm.py, line {line}: the code there nests more than" in record["output"]
        )
        page = (out / name / "feedback.md").read_text(encoding="utf-8")
        assert f"第 {line} 行：这里的代码嵌套超过了 {nesting.LIMIT} 层" in page


def test_the_pytest_grader_fails_a_deep_file_with_its_line(tmp_path):
    path = tmp_path / "ninetoothed_gemm.py"
    path.write_text(deep_source("chain"), encoding="utf-8")
    line = line_of(deep_source("chain"), DEEP["chain"][1])
    done = run_pytest(
        "grader",
        "--submission",
        str(path),
        "-q",
        "-p",
        "no:cacheprovider",
        "-k",
        "square-64x64x64 or batch_grader",
    )
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown[-3000:]
    assert (
        f"[failed] ninetoothed_gemm.py, line {line}: the code there nests more than "
        f"{nesting.LIMIT} levels deep"
    ) in shown
    assert "RecursionError" not in shown and "Traceback" not in shown


def test_gradescope_fails_a_deep_file_with_its_line(request):
    """Through the zip's run_autograder, as Gradescope runs it."""
    tree = request.getfixturevalue("autograder")
    results = grade_in_tree(tree, write(tree / "deep.py", deep_source("chain")), "deep")
    check_results(results)
    line = line_of(deep_source("chain"), DEEP["chain"][1])
    assert results["extra_data"]["status"] == "failed"
    assert (
        f"line {line}: the code there nests more than {nesting.LIMIT} levels deep"
        in results["output"]
    )
    assert all(test["score"] == 0 for test in results["tests"])


def write(path, text):
    pathlib.Path(path).write_text(text, encoding="utf-8")
    return path
