"""The Pythons the autograder zip's pinned stack installs on, and the check of the image's
``python3`` that opens its setup.sh.

constraints.txt pins the stack of the machine that built the zip, and each pinned
distribution's metadata says which Pythons it installs on (Requires-Python: numpy 2.4.6 says
">=3.11", triton 3.9.0 ">=3.11,<3.16"). On an image whose python3 is outside them, pip would
stop half-way, naming one package; setup.sh stops before installing anything, and names the
fix: the base image to choose, or a zip built under the image's Python.

Gradescope builds the autograder on the base image chosen on the assignment's Configure
Autograder page, Ubuntu 22.04 by default
(https://gradescope-autograders.readthedocs.io/en/latest/base_images/). ``IMAGES`` lists the
ones its updates page names (.../en/latest/updates/: Ubuntu 18.04, 20.04 and 22.04, Fedora 35
to 38, Rocky 8, 8.5 and 9, CentOS 8), each with its distribution's own python3; Ubuntu 24.04 is
a request (gradescope/autograder_samples issue 136). Gradescope's harness runs on the image's
python3 (its docs' python3_issues page), so setup.sh never replaces it.
"""

import functools
import importlib.metadata
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]
# (Gradescope's base image, its python3 as (major, minor)), the default first.
IMAGES = (
    ("Ubuntu 22.04", (3, 10)),
    ("Ubuntu 20.04", (3, 8)),
    ("Ubuntu 18.04", (3, 6)),
    ("Fedora 38", (3, 11)),
    ("Fedora 37", (3, 11)),
    ("Fedora 36", (3, 10)),
    ("Fedora 35", (3, 10)),
    ("Rocky 9", (3, 9)),
    ("Rocky 8.5", (3, 6)),
    ("Rocky 8", (3, 6)),
    ("CentOS 8", (3, 6)),
)
DEFAULT_IMAGE = "Ubuntu 22.04"
_GRID = [(minor, patch) for minor in range(40) for patch in range(20)]  # Python 3.minor.patch
_NAMED = 4  # packages the message names before it counts the rest


def kit_requires_python():
    """The kit's own Requires-Python, as pyproject.toml writes it ("" when unknown)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^requires-python\s*=\s*"([^"]*)"', text, re.M)
    return match[1] if match else ""


def _direct_dependencies():
    """The kit's own dependencies, canonical names: the message names them first."""
    from packaging.requirements import InvalidRequirement, Requirement

    from grader.batch.outputs import constraints

    names = set()
    for line in constraints._kit_requirements():
        try:
            names.add(re.sub(r"[-_.]+", "-", Requirement(line).name).lower())
        except InvalidRequirement:
            continue
    return names


def requirements(stack):
    """{"name version": Requires-Python} of each pinned distribution that states one."""
    found = {}
    for name, version in stack.items():
        try:
            specifier = importlib.metadata.metadata(name).get("Requires-Python") or ""
        except importlib.metadata.PackageNotFoundError:
            continue
        if specifier.strip():
            found[f"{name} {version}"] = specifier.strip()
    return found


@functools.cache
def _grid_versions():
    """The grid's points with their Version, made once: a build tries every pin on them."""
    from packaging.version import Version

    return [(point, Version("3.%d.%d" % point)) for point in _GRID]


@functools.cache
def _versions(specifier):
    """The (minor, patch) of the grid that ``specifier`` admits as Python 3.minor.patch."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(specifier)
    return frozenset(point for point, version in _grid_versions() if spec.contains(version))


class Supported:
    """The Pythons every pin installs on: ``minors`` (of 3.x), from ``lowest`` (minor, patch);
    ``bounding``, the pins that set the bounds, with ``requirements`` their Requires-Python."""

    def __init__(self, stack):
        self.kit = kit_requires_python()
        self.requirements = requirements(stack)
        admitted = {name: _versions(spec) for name, spec in self.requirements.items()}
        possible = _versions(self.kit)
        versions = possible.intersection(*admitted.values())
        if not versions:
            raise ValueError(
                "the pinned packages share no Python 3 version: "
                + ", ".join(f"{name} needs {spec}" for name, spec in self.requirements.items())
            )
        self.lowest = min(versions)
        self.minors = sorted({minor for minor, _ in versions})
        # The versions just outside the range that the kit itself admits: a pin that refuses
        # one of them sets a bound.
        below = [point for point in possible if point < self.lowest]
        above = [point for point in [(self.minors[-1] + 1, 0)] if point in possible]
        outside = ([max(below)] if below else []) + above
        direct = _direct_dependencies()
        self.bounding = sorted(
            (
                name
                for name, allowed in admitted.items()
                if any(point not in allowed for point in outside)
            ),
            key=lambda name: (name.split()[0] not in direct, name),
        )

    def range_text(self):
        first = f"3.{self.lowest[0]}" + (f".{self.lowest[1]}" if self.lowest[1] else "")
        if self.minors[-1] == _GRID[-1][0]:
            return f"Python {first} or newer"
        return f"Python {first} to 3.{self.minors[-1]}"

    def images(self):
        """Gradescope's base images whose python3 the stack installs on."""
        return [
            name
            for name, (major, minor) in IMAGES
            if (major, minor) in {(3, minor) for minor in self.minors}
        ]

    def why(self):
        named = [f"{name} needs {self.requirements[name]}" for name in self.bounding[:_NAMED]]
        more = len(self.bounding) - len(named)
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def setup_check(stack):
    """The lines of setup.sh that stop the build, naming the fix, unless the image's python3
    is one the pinned ``stack`` installs on; they run before anything is installed."""
    supported = Supported(stack)
    images = supported.images()
    minimum = re.fullmatch(r">=\s*([\d.]+)", supported.kit.strip())
    kit_needs = f" (the kit needs {minimum[1]} or newer)" if minimum else ""
    others = f" (or {', '.join(images[1:])})" if len(images) > 1 else ""
    choose = (
        f"choose the base image {images[0]}{others}, whose python3 is one of those"
        if images
        else f"no base image of Gradescope has such a python3; choose {DEFAULT_IMAGE}"
    )
    message = (
        f"setup.sh: this image has ${{found}}, and the grading stack that "
        f"constraints.txt pins installs on {supported.range_text()} only "
        f"({supported.why()}).\n"
        f"Fix: on the assignment's Configure Autograder page, {choose}, and upload "
        f"autograder.zip again; or build the zip with python -m grader gradescope "
        f"under the image's own Python{kit_needs}, so that constraints.txt pins "
        f"packages that install on it."
    )
    minors = " ".join(str(minor) for minor in supported.minors)
    patch_floor = supported.lowest[1]
    floor = (
        f'\n    [ "$minor" != {supported.lowest[0]} ] || [ "${{patch:-0}}" -ge {patch_floor} ]'
        if patch_floor
        else ""
    )
    return f"""# The pinned stack (constraints.txt) installs on {supported.range_text()} only: check the
# image's python3 before installing anything (grader.batch.packaging.image_python).
supported() {{
    local major minor patch
    IFS=. read -r major minor patch <<<"$1"
    [ "$major" = 3 ] || return 1
    case " {minors} " in *" $minor "*) ;; *) return 1 ;; esac{floor}
}}
found=$(python3 --version 2>&1) || found="no python3"
if ! supported "$(sed -n 's/^Python \\([0-9][0-9.]*\\).*/\\1/p' <<<"$found")"; then
    cat >&2 <<EOF
{message}
EOF
    exit 1
fi
"""
