"""A machine whose Python the unprivileged user can run, for the tests of the unsandboxed
mode as root (grader.batch.isolation.unprivileged).

On Gradescope, ``setup.sh`` installs Python and the kit where every user may read them. A
test machine may keep them behind a folder that only root may search (a Python under
``/root``, say). ``View.command`` then runs a command in a private mount namespace of its
own, where each such folder is covered by a stand-in of mode 711 that holds bind mounts of
its entries: the same files, one permission bit more, for that command alone. Nothing
outside the namespace changes; the stand-ins are empty folders there, removed afterwards.
"""

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

from grader.batch.isolation import launch, unprivileged

SETUP = r"""
import json, os, subprocess, sys
for folder, stand_in in json.loads(sys.argv[1]):
    for entry in os.scandir(folder):
        target = os.path.join(stand_in, entry.name)  # left by an earlier command, maybe
        if entry.is_symlink():
            if not os.path.lexists(target):
                os.symlink(os.readlink(entry.path), target)
            continue
        if entry.is_dir():
            os.makedirs(target, exist_ok=True)
        elif entry.is_file():
            open(target, "a").close()
        else:
            continue
        subprocess.run(["mount", "--rbind", entry.path, target], check=True)
    os.chmod(stand_in, 0o711)
    subprocess.run(["mount", "--rbind", stand_in, folder], check=True)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def _blocked(paths, who):
    """Every folder on the way to ``paths`` that ``who`` may not search, outermost first."""
    found = []
    for path in paths:
        path = pathlib.Path(path).resolve()
        for folder in reversed([path, *path.parents]):
            if (
                folder.is_dir()
                and folder not in found
                and unprivileged.unreachable(folder, who) == str(folder)
            ):
                found.append(folder)
    return sorted(found, key=lambda folder: len(folder.parts))


class View:
    """Where ``who`` (None: not root, nothing to do) cannot reach this Python, the stand-ins
    that let it; ``problem`` says why there can be none. ``tmp`` is a $TMPDIR for the
    grader that ``who`` may pass through (mode 711: the batch root lives there)."""

    def __init__(self, who):
        self.who, self.plan, self.problem, self.top = who, [], None, None
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-tmp-", dir="/tmp"))
        self.tmp.chmod(0o711)
        if who is None:
            return
        folders = _blocked([*launch.python_folders(), sys.executable], who)
        if not folders:
            return
        try:
            subprocess.run(
                ["unshare", "--mount", "--propagation", "private", "true"],
                check=True,
                capture_output=True,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError) as error:
            self.problem = (
                f"{who.name} cannot reach this Python ({folders[0]} is closed to "
                "it), and no private mount namespace can open it here "
                f"(unshare --mount: {error})"
            )
            return
        self.top = pathlib.Path(tempfile.mkdtemp(prefix="ntgemm-view-", dir="/tmp"))
        for number, folder in enumerate(folders):
            (self.top / str(number)).mkdir()
            self.plan.append((str(folder), str(self.top / str(number))))

    def command(self, argv):
        if not self.plan:
            return list(argv)
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-c",
            SETUP,
            json.dumps(self.plan),
            *argv,
        ]

    def close(self):
        """Remove the stand-ins, once no command of the view runs (their mounts went with
        its namespace: here they are empty folders and files), and ``tmp``."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.top is None:
            return
        for root, dirs, files in os.walk(self.top):
            for name in dirs + files:
                path = os.path.join(root, name)
                assert not os.path.ismount(path), f"{path} is still a mount point here"
                if not os.path.islink(path) and stat.S_ISREG(os.lstat(path).st_mode):
                    assert os.lstat(path).st_size == 0, path
        shutil.rmtree(self.top)
