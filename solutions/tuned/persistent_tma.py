"""The persistent TMA kernel: one program per SM, operand tiles loaded by the hardware.

This schedule was what NineToothed lacked at large aligned shapes on an H100: faster than
the one-program-per-tile grid at 8192^3, and in 128x128 tiles at 6144x1024x4096
(docs/perf-notes.md, round 7, has the numbers). Neither half alone gained (round 5): TMA loads in a grid
of one program per tile, or a persistent schedule with pointer loads.

P programs (the SM count) walk tiles p, p + P, p + 2P, ... in grouped (GROUP_M) order,
load A and B tiles and store C through tensor descriptors, accumulate in float32 and
store float16. The application is benchmarks/lab/triton_ceiling.py's kernel body, so
the generated Triton differs from that plain-Triton ceiling in names, unused size and
stride arguments, and in always launching P programs.

The arrangement does not tile the work: the application builds its descriptors from
``data_ptr()``, ``stride()`` and the source shapes. It sets the grid (P programs) and
carries the constants: NineToothed gives an application no name for a constant but a
size in an arranged shape, so C's per-program level is (PROGRAMS, GROUP_M), expanded
from (1, 1) and never loaded. Block sizes, P and GROUP_M stay constexprs.

TMA reads rows that are not whole 16-byte units wrongly and raises nothing (round 5:
K = 130 gave 59,248 wrong elements), so the launcher refuses them
(``require_tma_rows``) and the tuner offers this kernel only where ``tma_rows_problem``
finds none. Device-side descriptors need scratch memory (``use_torch_scratch``). This
module must hold no ``triton.jit`` function: NineToothed copies every one it finds
beside the application into the generated kernel's source.
"""

import functools

import ninetoothed
import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

from grader.core import generated_cache

BLOCK_M = Symbol("BLOCK_M", constexpr=True)
BLOCK_N = Symbol("BLOCK_N", constexpr=True)
BLOCK_K = Symbol("BLOCK_K", constexpr=True)
GROUP_M = Symbol("GROUP_M", constexpr=True)
PROGRAMS = Symbol("PROGRAMS", constexpr=True)


def tma_rows_problem(*tensors):
    """Why TMA would read these (lhs, rhs, output) wrong, or None: float16 only, rows
    contiguous and whole 16-byte units, starting on a 16-byte boundary."""
    for name, tensor in zip(("lhs", "rhs", "output"), tensors):
        if tensor.dtype != torch.float16:
            return f"{name}: the TMA kernels take float16, got {tensor.dtype}"
        row_bytes = tensor.stride(0) * tensor.element_size()
        if tensor.stride(1) != 1 or row_bytes % 16 or tensor.data_ptr() % 16:
            return (
                f"{name}: TMA loads need contiguous rows starting on 16-byte "
                f"boundaries; got strides {tuple(tensor.stride())} "
                f"({row_bytes} bytes per row)"
            )
    return None


def require_tma_rows(*tensors):
    """Refuse operands TMA would read wrong (see ``tma_rows_problem``)."""
    problem = tma_rows_problem(*tensors)
    if problem:
        raise ValueError(problem)


def use_torch_scratch(device="cuda"):
    """Let Triton allocate descriptor scratch space through torch on ``device`` (for the
    current thread: Triton keeps the allocator in a context variable)."""
    triton.set_allocator(
        lambda size, alignment, stream: torch.empty(size, device=device, dtype=torch.int8)
    )


def every_program(tensor, block_shape):
    """(PROGRAMS,) of (tile rows, tile columns) of blocks: each program sees every tile."""
    whole = tensor.tile(block_shape).tile((-1, -1))  # (1, 1) of (rows, columns) of blocks
    return whole.squeeze(1).expand((PROGRAMS,))


def under_constants(tensor, block_shape, constants):
    """(PROGRAMS,) of (*constants) of (tile rows, tile columns) of blocks: a level whose
    sizes only name constants. The blocks stay innermost: NineToothed bounds their size."""
    whole = tensor.tile(block_shape).tile((-1, -1)).tile((-1, -1))  # (1, 1) of (1, 1) of ...
    whole.dtype = whole.dtype.expand(constants)
    return whole.squeeze(1).expand((PROGRAMS,))


def persistent_tma_arrangement(lhs, rhs, output):
    """A grid of PROGRAMS. The application reads BLOCK_M and BLOCK_K from lhs's blocks,
    BLOCK_N from rhs's and PROGRAMS and GROUP_M from output's per-program shape."""
    return (
        every_program(lhs, (BLOCK_M, BLOCK_K)),
        every_program(rhs, (BLOCK_K, BLOCK_N)),
        under_constants(output, (BLOCK_M, BLOCK_N), (PROGRAMS, GROUP_M)),
    )


def walk_tiles(lhs, rhs, output, flatten, warp_specialize):
    """The ceiling's kernel body; NineToothed inlines it into each application below.

    lhs.dtype.shape is (BLOCK_M, BLOCK_K), rhs.dtype.shape (BLOCK_K, BLOCK_N) and
    output.shape (PROGRAMS, GROUP_M). They are written out where used: the Triton
    interpreter turns a constexpr assigned to a name into a tensor.
    """
    m_size = lhs.source.shape[0]
    k_size = lhs.source.shape[1]
    n_size = rhs.source.shape[1]
    lhs_tiles = ntl.make_tensor_descriptor(
        lhs.source.data_ptr(),
        shape=[m_size, k_size],
        strides=[lhs.source.stride(0), 1],
        block_shape=[lhs.dtype.shape[0], lhs.dtype.shape[1]],
    )
    rhs_tiles = ntl.make_tensor_descriptor(
        rhs.source.data_ptr(),
        shape=[k_size, n_size],
        strides=[rhs.source.stride(0), 1],
        block_shape=[rhs.dtype.shape[0], rhs.dtype.shape[1]],
    )
    output_tiles = ntl.make_tensor_descriptor(
        output.source.data_ptr(),
        shape=[m_size, n_size],
        strides=[output.source.stride(0), 1],
        block_shape=[lhs.dtype.shape[0], rhs.dtype.shape[1]],
    )
    grid_m = ntl.cdiv(m_size, lhs.dtype.shape[0])
    per_group = output.shape[1] * ntl.cdiv(n_size, rhs.dtype.shape[1])
    for tile in ntl.range(
        ntl.program_id(0),
        grid_m * ntl.cdiv(n_size, rhs.dtype.shape[1]),
        output.shape[0],
        flatten=flatten,
        warp_specialize=warp_specialize,
    ):
        first_row = (tile // per_group) * output.shape[1]
        rows = ntl.minimum(grid_m - first_row, output.shape[1])
        row = first_row + (tile % per_group) % rows
        column = (tile % per_group) // rows
        accumulator = ntl.zeros((lhs.dtype.shape[0], rhs.dtype.shape[1]), dtype=ntl.float32)
        for k in range(ntl.cdiv(k_size, lhs.dtype.shape[1])):
            a = lhs_tiles.load([row * lhs.dtype.shape[0], k * lhs.dtype.shape[1]])
            b = rhs_tiles.load([k * lhs.dtype.shape[1], column * rhs.dtype.shape[1]])
            accumulator = ntl.dot(a, b, accumulator)
        output_tiles.store(
            [row * lhs.dtype.shape[0], column * rhs.dtype.shape[1]], accumulator.to(ntl.float16)
        )


# tl.range takes flatten and warp_specialize as constants: one application per pair.
def application(lhs, rhs, output):
    walk_tiles(lhs, rhs, output, False, False)


def flattened_application(lhs, rhs, output):
    walk_tiles(lhs, rhs, output, True, False)


def warp_specialized_application(lhs, rhs, output):
    walk_tiles(lhs, rhs, output, False, True)


def flattened_warp_specialized_application(lhs, rhs, output):
    walk_tiles(lhs, rhs, output, True, True)


APPLICATIONS = {
    (False, False): application,
    (True, False): flattened_application,
    (False, True): warp_specialized_application,
    (True, True): flattened_warp_specialized_application,
}


@functools.cache
def persistent_tma_kernel(num_warps, num_stages, flatten, warp_specialize):
    """The NineToothed kernel; block sizes, GROUP_M and PROGRAMS are given at launch."""
    with generated_cache.staff_kernel():  # tensor descriptors: beyond a student's kernel
        return ninetoothed.make(
            persistent_tma_arrangement,
            APPLICATIONS[bool(flatten), bool(warp_specialize)],
            (Tensor(2), Tensor(2), Tensor(2)),
            num_warps=num_warps,
            num_stages=num_stages,
        )


@functools.cache
def unchecked_launcher(
    block_m,
    block_n,
    block_k,
    num_warps,
    num_stages,
    programs,
    group=8,
    flatten=True,
    warp_specialize=False,
):
    """``run(lhs, rhs, output)`` for operands already found TMA-readable
    (solutions.tuned.kernels.persistent checks them once, to pick a kernel): ``programs``
    programs (the SM count) in all, whatever the number of tiles; those past the last
    tile do nothing."""
    kernel = persistent_tma_kernel(num_warps, num_stages, flatten, warp_specialize)

    def run(lhs, rhs, output):
        use_torch_scratch(lhs.device)
        kernel(
            lhs,
            rhs,
            output,
            BLOCK_M=block_m,
            BLOCK_N=block_n,
            BLOCK_K=block_k,
            GROUP_M=group,
            PROGRAMS=programs,
        )

    return run


def refusing_misread_rows(launch):
    """``launch(lhs, rhs, output)``, after refusing operands TMA would read wrong."""

    def run(lhs, rhs, output):
        require_tma_rows(lhs, rhs, output)
        launch(lhs, rhs, output)

    return run


@functools.cache
def nt_persistent_tma(*args, **kwargs):
    """``unchecked_launcher(*args, **kwargs)``, refusing operands TMA would read wrong."""
    return refusing_misread_rows(unchecked_launcher(*args, **kwargs))
