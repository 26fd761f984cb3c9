"""Reinstall what a class was graded with: a pip constraints file from its environment.json.

    python -m grader constraints OUT_DIR --out constraints.txt

Every batch records in ``environment.json`` (grader.batch.outputs.reports.environment) the version
of each package of the grading stack: the kit's own dependencies (``pyproject.toml``) and,
through their metadata, everything they require, as installed. The constraints file pins
each of them (``name==version``), so that

    python -m pip install -c constraints.txt -e .

in a checkout of the kit at the recorded revision installs the same stack. Where torch came
from PyTorch's own index (a local version such as ``2.13.0+cpu`` or ``+cu128``), the file
says which index to add. An ``environment.json`` of a grader before this record names only
torch, triton, ninetoothed and pandas, and the file says so. A merged OUT_DIR is pinned to
what its shards were graded with, which must agree.
"""

import importlib.metadata
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]  # the checkout: grader/batch/outputs/ is 3 down
OLD_FIELDS = ("torch", "triton", "ninetoothed", "pandas")  # what older records hold
TORCH_INDEX = "https://download.pytorch.org/whl/"


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _kit_requirements():
    """The kit's own dependencies, as written in pyproject.toml (else in its installed
    metadata, on a Python without tomllib)."""
    try:
        import tomllib

        with open(ROOT / "pyproject.toml", "rb") as stream:
            return tomllib.load(stream)["project"]["dependencies"]
    except (ImportError, OSError, KeyError):
        try:
            return importlib.metadata.requires("ntgemm-kit") or []
        except importlib.metadata.PackageNotFoundError:  # run from a copy, never installed
            return []


def installed_stack():
    """{package: version} of every installed distribution the kit's dependencies need, for
    this platform (markers evaluated, extras not followed)."""
    from packaging.requirements import InvalidRequirement, Requirement

    found, pending = {}, list(_kit_requirements())
    while pending:
        try:
            requirement = Requirement(pending.pop())
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = _canonical(requirement.name)
        if name in found:
            continue
        try:
            distribution = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[name] = distribution.version
        pending += distribution.requires or []
    return dict(sorted(found.items()))


def _stack(environment):
    """(packages, complete): what one environment.json pins; complete is False for a record
    of an older grader, which named a few packages only."""
    if isinstance(environment.get("packages"), dict):
        return environment["packages"], True
    return {name: environment[name] for name in OLD_FIELDS if environment.get(name)}, False


def pins(environment):
    """(packages, complete) of a batch: its own record, or its shards' (which must agree)."""
    shards = environment.get("shard_environments")
    records = [shard for shard in shards if shard] if shards else [environment]
    if not records:
        raise ValueError("environment.json names no shard environment to pin")
    stacks = [_stack(record) for record in records]
    packages, complete = {}, all(done for _, done in stacks)
    for number, (stack, _) in enumerate(stacks, start=1):
        for name, version in stack.items():
            if packages.setdefault(name, version) != version:
                raise ValueError(
                    f"the shards were graded with different versions of {name} "
                    f"({packages[name]} and {version}, in shard environment "
                    f"{number}): no one constraints file reinstalls both"
                )
    return dict(sorted(packages.items())), complete


def text(environment, source="environment.json"):
    """The constraints file for ``environment`` (environment.json, read)."""
    packages, complete = pins(environment)
    if not packages:
        raise ValueError(f"{source} records no package versions to pin")
    first = (environment.get("shard_environments") or [environment])[0] or environment
    lines = [
        f"# pip constraints: the grading stack recorded in {source}",
        f"# (recorded {first.get('timestamp', 'at an unrecorded time')}, Python "
        f"{first.get('python', '?')} on {first.get('platform', '?')}, the kit at "
        f"revision {first.get('grader_revision') or 'unknown (not a git checkout)'}, grader "
        f"{first.get('grader_version', '?')}).",
        "# Use it from a checkout of the kit at that revision, with that Python:",
    ]
    torch = packages.get("torch", "")
    local = torch.partition("+")[2]
    index = f" --extra-index-url {TORCH_INDEX}{local}" if local else ""
    lines.append(f"#   python -m pip install{index} -c constraints.txt -e .")
    if not complete:
        lines.append(
            f"# An older grader recorded only {', '.join(OLD_FIELDS)}: the other "
            "packages are not pinned."
        )
    lines += [f"{name}=={version}" for name, version in packages.items()]
    return "\n".join(lines) + "\n"


def write(out_dir, target):
    """Write the constraints of ``out_dir`` to ``target``; returns how many packages."""
    path = pathlib.Path(out_dir) / "environment.json"
    try:
        environment = json.loads(path.read_text(encoding="utf-8"))
    except OSError:
        raise ValueError(
            f"{out_dir} has no environment.json: give the OUT_DIR of 'grade' or 'merge'"
        ) from None
    except ValueError:
        raise ValueError(f"{path} is not JSON") from None
    content = text(environment, f"{path.parent.name}/environment.json")
    target = pathlib.Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    from grader.batch.outputs.atomic_file import atomic_write

    atomic_write(target, content)
    return sum(1 for line in content.splitlines() if line and not line.startswith("#"))
