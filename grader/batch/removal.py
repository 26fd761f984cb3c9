"""Deleting a folder a run wrote, whatever permissions it left on it.

Both sides of the sandbox need it: the parent for a run's folders
(grader.batch.isolation.folders), a sandbox's fork server for what a run left in the
sandbox (grader.batch.inside.forkserver).
"""

import os
import shutil
import stat


def remove_tree(path):
    """Delete a folder, read-only parts included. Root needs no permission to, and changes
    none: an unprivileged run may swap a folder of its scratch for a link meanwhile."""

    def retry(function, target, _excinfo):
        try:
            os.chmod(os.path.dirname(target), stat.S_IRWXU)
            function(target)
        except OSError:
            pass

    if not os.path.exists(path):
        return
    if os.geteuid() == 0:
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        os.chmod(path, stat.S_IRWXU)
    except OSError:
        pass
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            try:
                os.chmod(os.path.join(root, name), stat.S_IRWXU)
            except OSError:
                pass
    shutil.rmtree(path, onerror=retry)
