"""The packages are layered by audience: no module imports a layer above its own, and no
module imports itself back. The batch grader's rooms are layers of their own.

The layers are declared once, in ``grader.batch.import_graph.LAYERS``; the handout
takes its student side from the same declaration.
"""

import ast
import graphlib

import pytest

from grader.batch import import_graph

ROOT = import_graph.ROOT
KIT_FILES = sorted(
    path
    for package in import_graph.PACKAGES
    for path in (ROOT / package).rglob("*.py")
    if "demo_class" not in path.parts and "__pycache__" not in path.parts
)


def _edges():
    for path in KIT_FILES:
        module = import_graph.module_name(path)
        here = import_graph.layer(module)
        if here is None:
            continue
        for imported in import_graph.imports(path):
            yield module, here, imported, import_graph.layer(imported)


def test_every_kit_module_has_a_layer():
    assert KIT_FILES
    assert all(
        import_graph.layer(import_graph.module_name(path)) is not None or "tests" in path.parts
        for path in KIT_FILES
    )


def test_no_module_imports_a_layer_above_its_own():
    upward = [
        f"{module} ({import_graph.LAYERS[here][0]}) imports {imported} "
        f"({import_graph.LAYERS[there][0]})"
        for module, here, imported, there in _edges()
        if there is None or there > here
    ]
    assert not upward, "\n".join(upward)


def test_student_layers_never_reach_staff_code():
    student = [
        import_graph.module_name(path)
        for path in KIT_FILES
        if import_graph.for_students(import_graph.module_name(path))
    ]
    reached = import_graph.closure(tuple(student))
    assert [name for name in reached if not import_graph.for_students(name)] == []


def test_the_kit_has_no_import_circle():
    graph = {
        import_graph.module_name(path): import_graph.imports(path)
        for path in KIT_FILES
        if import_graph.layer(import_graph.module_name(path)) is not None
    }
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        pytest.fail(f"an import circle: {' -> '.join(error.args[1])}")


BATCH = ROOT / "grader" / "batch"
ROOMS = sorted(folder for folder in BATCH.iterdir() if (folder / "__init__.py").is_file())


def test_every_room_of_the_batch_grader_is_a_layer():
    declared = {prefix for prefix, _ in import_graph.LAYERS}
    assert ROOMS and {f"grader.batch.{room.name}" for room in ROOMS} <= declared


@pytest.mark.parametrize("room", ROOMS, ids=lambda room: room.name)
def test_a_rooms_init_is_its_docstring_alone(room):
    """It says what the room owns and may import; code there would ride along into the
    sandbox's job folder and the Gradescope zip with every module of the room."""
    body = ast.parse((room / "__init__.py").read_text(encoding="utf-8")).body
    assert (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and "import" in body[0].value.value
    )


def test_no_room_holds_more_than_a_third_of_the_batch_grader():
    def lines(folder):
        return sum(
            len(path.read_text(encoding="utf-8").splitlines())
            for path in folder.rglob("*.py")
            if "__pycache__" not in path.parts
        )

    total = lines(BATCH)
    assert {room.name: lines(room) for room in ROOMS if lines(room) > total / 3} == {}


@pytest.mark.parametrize(
    "source, upward",
    [
        ("from grader.batch.outputs import reports\n", True),
        ("from grader.core import cases\n", False),
        ("from benchmarks import harness\n", True),
        ("from ledger.formulas import occupancy\n", False),
        ("from . import checks\n", False),
    ],
)
def test_an_upward_import_is_seen(tmp_path, source, upward):
    for folder in (
        "ledger",
        "grader",
        "grader/core",
        "grader/batch",
        "grader/batch/outputs",
        "benchmarks",
    ):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    for name in (
        "grader/core/cases.py",
        "grader/core/checks.py",
        "grader/batch/outputs/reports.py",
        "benchmarks/harness.py",
        "ledger/formulas.py",
    ):
        (tmp_path / name).write_text("X = 1\n")
    module = tmp_path / "grader" / "core" / "suite.py"
    module.write_text(source)
    here = import_graph.layer("grader.core.suite")
    layers = [import_graph.layer(name) for name in import_graph.imports(module, tmp_path)]
    assert layers and any(there > here for there in layers) == upward


def test_the_readme_table_matches_the_tree():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Where everything lives", 1)[1].split("\n\n", 2)[1]
    rows = [
        line.split("|")[1].strip().strip("`")
        for line in table.splitlines()
        if line.startswith("| `")
    ]
    assert all((ROOT / row).exists() for row in rows), rows
    packages = {
        prefix.replace(".", "/") + "/"
        for prefix, _ in import_graph.LAYERS
        if (ROOT / prefix.replace(".", "/")).is_dir()
    }
    assert packages | {"assignment/", "docs/", "conftest.py"} <= set(rows), sorted(
        packages - set(rows)
    )
