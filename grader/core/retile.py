"""A submission's own arrangement() and application() built again with other block sizes.

One way for every caller: the grader's cases at other block sizes (a kernel right only
while BLOCK_SIZE_N equals BLOCK_SIZE_K passes at 64x64x64) and the benchmark's what-if
(benchmarks.what_if), which times the same rebuilds. The tiles reach the arrangement by
the route it reads them: its ``block_size_m/n/k`` keyword parameters (the reference's
style) or the module's ``BLOCK_SIZE_M/N/K`` (the skeleton's).
"""

import functools
import inspect
import types

KEYWORDS = ("block_size_m", "block_size_n", "block_size_k")
BLOCK_NAMES = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")
PROBE_SHAPE = (512, 512, 512)  # tiles up to 256 fit; M, N and K all span several
# How a case's error text starts when the file lays out the same tiles whatever it is given.
NOT_RETILED = "not built at other block sizes: "


def takes_keywords(module):
    """True when ``arrangement`` has the block_size_m/n/k keyword parameters."""
    try:
        parameters = inspect.signature(module.arrangement).parameters
    except (TypeError, ValueError):
        return False
    return all(name in parameters for name in KEYWORDS)


def arrangement_with(module, blocks):
    """The file's arrangement with ``blocks`` as its tiles, through the route it reads them by.

    With keyword parameters they are passed; otherwise BLOCK_SIZE_M/N/K are set in the
    module's globals for the length of the call and put back after it (``ninetoothed.make``
    calls the arrangement once, while it builds).
    """
    if takes_keywords(module):
        return functools.partial(module.arrangement, **dict(zip(KEYWORDS, blocks)))

    def arrangement(lhs, rhs, output):
        space = module.arrangement.__globals__
        saved = {name: space[name] for name in BLOCK_NAMES if name in space}
        space.update(zip(BLOCK_NAMES, blocks))
        try:
            return module.arrangement(lhs, rhs, output)
        finally:
            for name in BLOCK_NAMES:
                space.pop(name, None)
            space.update(saved)

    return arrangement


def retiled(module, blocks):
    """A stand-in module whose ``arrangement`` lays out ``blocks``, for grader.core.layout."""
    return types.SimpleNamespace(arrangement=arrangement_with(module, blocks))


def tiles_used(module, blocks, shape=PROBE_SHAPE):
    """The (BM, BN, BK) the arrangement lays out when given ``blocks``, or None if unreadable."""
    from grader.core import layout

    return layout.tile_sizes(retiled(module, blocks), shape)


def refusal(module, blocks):
    """Why the file cannot be built at ``blocks``, as a case's error text; "" when it can.

    Only tiles read and found other than ``blocks`` refuse: a layout the reader does not
    know is built and judged by its output."""
    used = tiles_used(module, blocks)
    if used is None or used == tuple(blocks):
        return ""
    given, laid = ("x".join(map(str, tiles)) for tiles in (blocks, used))
    return (
        f"{NOT_RETILED}given {given} tiles (as block_size_m/n/k, or as BLOCK_SIZE_M/N/K) "
        f"your arrangement still lays out {laid}: a size is written into tile(...). Use "
        "the block sizes there, so that the kernel can be built at others.\n"
        f"给出 {given} 的分块（block_size_m/n/k 参数或 BLOCK_SIZE_M/N/K 常量），你的 "
        f"arrangement 仍按 {laid} 分块：tile(...) 里写死了数字。请在那里使用分块大小，"
        "这样 kernel 才能以其他分块大小构建。"
    )


def make(module, blocks, **options):
    """``ninetoothed.make`` of the file's two functions with ``blocks`` as its tiles.

    ``make`` writes the arranged types into ``application.__annotations__``; they are put
    back afterwards, so the file's own ``_kernel()`` builds as if nothing had happened.
    """
    import ninetoothed
    from ninetoothed import Tensor

    application = module.application
    saved = dict(getattr(application, "__annotations__", {}))
    try:
        return ninetoothed.make(
            arrangement_with(module, blocks),
            application,
            (Tensor(2), Tensor(2), Tensor(2)),
            **options,
        )
    finally:
        application.__annotations__ = saved
