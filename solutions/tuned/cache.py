"""The tuner's choices kept between runs, so that a shape is timed once per machine.

One JSON file, NTGEMM_TUNING_CACHE (default: ~/.ninetoothed/ntgemm_tuning.json;
"off" keeps nothing), maps an environment (the GPU, the torch, triton and
ninetoothed versions and the candidate list) to {shape key: configuration name}.
A new GPU, new software or a changed table starts afresh.
"""

import importlib.metadata
import json
import os
import pathlib

import torch


class TuningCache:
    """This environment's stored choices, read on first use and written on every choice."""

    def __init__(self, configs):
        self.configs = configs  # every candidate the tuner may time: part of the key
        self.choices = None  # shape key -> configuration name, once read

    @property
    def path(self):
        """The file, as NTGEMM_TUNING_CACHE says now, or None when it says "off"."""
        where = os.environ.get("NTGEMM_TUNING_CACHE", "")
        if where.lower() == "off":
            return None
        if where:
            return pathlib.Path(where)
        return pathlib.Path.home() / ".ninetoothed" / "ntgemm_tuning.json"

    def choice(self, shape_key):
        """The stored configuration name for a shape key, or None."""
        return self.stored().get(shape_key)

    def stored(self):
        if self.choices is None:
            path = self.path
            everything = read(path) if path is not None else {}
            self.choices = dict(everything.get(self.environment_key(), {}))
        return self.choices

    def store(self, shape_key, config_name):
        """Remember a choice here and in the file; a file that cannot be written is left."""
        self.stored()[shape_key] = config_name
        path = self.path
        if path is None:
            return
        try:
            everything = read(path)
            everything.setdefault(self.environment_key(), {})[shape_key] = config_name
            path.parent.mkdir(parents=True, exist_ok=True)
            scratch = path.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(everything, indent=1, sort_keys=True))
            scratch.replace(path)
        except OSError:
            pass  # a read-only home only costs the next run its tuning

    def environment_key(self):
        import triton

        return " | ".join(
            (
                torch.cuda.get_device_name(),
                f"torch {torch.__version__}",
                f"triton {triton.__version__}",
                f"ninetoothed {version('ninetoothed')}",
                ",".join(config.name for config in self.configs),
            )
        )


def read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "?"
