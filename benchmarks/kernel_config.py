"""Which tile configuration a submission's kernel actually ran with, as far as we can see.

A fixed configuration is read from the module's BLOCK_SIZE_M/N/K ints, and the
warps and pipeline stages from the launcher NineToothed generated. With
``NINETOOTHED_AUTOTUNE=1`` the BLOCK_SIZE_* names are ``ninetoothed.block_size()``
symbols; NineToothed then wraps the kernel in ``triton.autotune`` inside the
generated module, and the Triton autotuner keeps the configuration it picked
for each shape (``best_config``, ``cache``) and how long its search took
(``bench_time``). We read those attributes; anything we cannot see is reported
as ``unknown`` rather than guessed.

A file may also run its own search (the tuned reference, solutions/tuned_gemm.py,
does with NINETOOTHED_AUTOTUNE=1) and say what it chose through
``chosen_config(m, n, k)``, a dict with ``block_m``, ``block_n``, ``block_k``,
``num_warps``, ``num_stages`` and optionally ``name``, ``source`` and ``tuning_s``.
When that function exists it is believed over the Triton autotuner, and the
kernel-only timing is left out: the ``_kernel()`` handle is then not what
``nt_gemm`` runs.
"""

import dataclasses
import re
import sys

from grader.core.retile import BLOCK_NAMES

UNKNOWN = "unknown"


@dataclasses.dataclass
class KernelConfig:
    block_m: object = UNKNOWN  # int, or UNKNOWN
    block_n: object = UNKNOWN
    block_k: object = UNKNOWN
    num_warps: object = UNKNOWN
    num_stages: object = UNKNOWN
    source: str = UNKNOWN  # "fixed", "autotuned" or "unknown"
    name: str = ""  # the file's own name for the configuration, when it gives one

    @property
    def blocks_known(self):
        return all(isinstance(v, int) for v in (self.block_m, self.block_n, self.block_k))

    @property
    def launch_known(self):
        return isinstance(self.num_warps, int) and isinstance(self.num_stages, int)

    def label(self):
        if self.name:
            return self.name
        if not self.blocks_known:
            return UNKNOWN
        text = f"{self.block_m}x{self.block_n}x{self.block_k}"
        if self.launch_known:
            text += f" ({self.num_warps}w/{self.num_stages}s)"
        return text


def is_autotuned(module):
    """True when any BLOCK_SIZE_* is not a plain int (a ninetoothed.block_size symbol)."""
    return any(not isinstance(getattr(module, name, None), int) for name in BLOCK_NAMES)


def kernel_handle(module):
    """The handle ``nt_gemm`` launches (the skeleton's cached ``_kernel()``), or None."""
    factory = getattr(module, "_kernel", None)
    if not callable(factory):
        return None
    try:
        handle = factory()
    except Exception:  # noqa: BLE001 - the file's own kernel factory: whatever it raises, no config to report
        return None
    return handle if callable(handle) else None


def _generated_module(handle):
    source = getattr(handle, "_source", None)
    return sys.modules.get(str(source)) if source is not None else None


def launch_options(handle):
    """(num_warps, num_stages) written into a generated launcher with a single config."""
    source = getattr(handle, "_source", None)
    if source is None:
        return UNKNOWN, UNKNOWN
    try:
        with open(source, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return UNKNOWN, UNKNOWN
    warps = set(re.findall(r"num_warps=(\d+)", text))
    stages = set(re.findall(r"num_stages=(\d+)", text))
    if len(warps) == 1 and len(stages) == 1:
        return int(warps.pop()), int(stages.pop())
    return UNKNOWN, UNKNOWN


def autotuner(handle):
    """The triton Autotuner inside the generated module, or None."""
    module = _generated_module(handle)
    if module is None:
        return None
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return None
    for value in vars(module).values():
        if isinstance(value, Autotuner):
            return value
    return None


def fixed_config(module, handle):
    warps, stages = launch_options(handle) if handle is not None else (UNKNOWN, UNKNOWN)
    return KernelConfig(
        module.BLOCK_SIZE_M, module.BLOCK_SIZE_N, module.BLOCK_SIZE_K, warps, stages, "fixed"
    )


class SearchWatch:
    """Tells, around one call, whether the autotuner searched and what it chose.

    ``start()`` before the first call of a size, ``finish()`` after it.
    """

    def __init__(self, module, handle):
        self.module = module
        self.tuner = autotuner(handle) if handle is not None else None
        self._seen = 0

    def start(self):
        self._seen = len(getattr(self.tuner, "cache", {}) or {})

    def finish(self):
        """(KernelConfig, search seconds or None) for the call just made."""
        if self.tuner is None:
            return KernelConfig(), None
        cache = getattr(self.tuner, "cache", {}) or {}
        searched = len(cache) > self._seen
        search_s = getattr(self.tuner, "bench_time", None) if searched else None
        return self.chosen(), search_s

    def used(self):
        """Whether the handle's autotuner has run at all: if not, nt_gemm does not use it."""
        return self.tuner is not None and getattr(self.tuner, "best_config", None) is not None

    def chosen(self):
        config = getattr(self.tuner, "best_config", None)
        if config is None:
            return KernelConfig()
        values = dict(getattr(config, "kwargs", {}) or {})
        blocks = []
        for name in BLOCK_NAMES:
            value = values.get(str(getattr(self.module, name, "")), UNKNOWN)
            blocks.append(int(value) if isinstance(value, int) else UNKNOWN)
        warps = getattr(config, "num_warps", None)
        stages = getattr(config, "num_stages", None)
        return KernelConfig(
            *blocks,
            int(warps) if isinstance(warps, int) else UNKNOWN,
            int(stages) if isinstance(stages, int) else UNKNOWN,
            "autotuned",
        )


def reports_own_choice(module):
    """True when the file says itself which configuration it ran (``chosen_config``)."""
    return callable(getattr(module, "chosen_config", None))


def own_choice(module, m, n, k):
    """(KernelConfig, search seconds or None) from the file's ``chosen_config(m, n, k)``."""
    try:
        info = module.chosen_config(m, n, k)
    except Exception:  # noqa: BLE001 - the file's own chosen_config(): whatever it raises, none reported
        info = None
    if not isinstance(info, dict):
        return KernelConfig(source="autotuned"), None

    def whole(key):
        value = info.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else UNKNOWN

    config = KernelConfig(
        whole("block_m"),
        whole("block_n"),
        whole("block_k"),
        whole("num_warps"),
        whole("num_stages"),
        "autotuned",
        str(info.get("name", "") or ""),
    )
    searched = info.get("source", "tuned") == "tuned"
    seconds = info.get("tuning_s")
    return config, (float(seconds) if searched and isinstance(seconds, (int, float)) else None)
