"""The kit's kernel variants, correct and mistaken, as named edits of the model answer.

The base is the model answer (not the demo student ada) because it is the reference a
variant must never drift from. Edits anchor only on text that stays when the model answer
is reworked: arrangement(), application(), the BLOCK_SIZE_* lines and nt_gemm's kernel call.
``python -m grader.tests.build_variants FOLDER [NAME ...]`` writes them as a class to grade.
"""

from grader.tests.source_edits import Variant, appended, class_command, function

LHS_TILE = "lhs.tile((block_size_m, block_size_k))"
RHS_TILE = "rhs.tile((block_size_k, block_size_n))"
OUTPUT_TILE = "output.tile((block_size_m, block_size_n))"
LHS_EXPAND = "lhs_arranged.expand((-1, grid_n))"
RHS_EXPAND = "rhs_arranged.expand((grid_m, -1))"
LHS_SQUEEZE = "    lhs_arranged.dtype = lhs_arranged.dtype.squeeze(0)\n"
RHS_SQUEEZE = "    rhs_arranged.dtype = rhs_arranged.dtype.squeeze(1)\n"
ZEROS = "accumulator = ntl.zeros(output.shape, dtype=ntl.float32)"
LOOP = "for k in range(lhs.shape[0]):"
DOT = "accumulator += ntl.dot(lhs[k], rhs[k])"
STORE = "    output = accumulator  # noqa: F841 (NineToothed turns this into the store)\n"
ARRANGED = "return lhs_arranged, rhs_arranged, output_arranged"
RETURN = "    _kernel()(lhs, rhs, output)\n    return output\n"
BLOCKS = "BLOCK_SIZE_M = 64\n    BLOCK_SIZE_N = 64\n    BLOCK_SIZE_K = 64"


def _blocks(m, n, k):
    return BLOCKS, f"BLOCK_SIZE_M = {m}\n    BLOCK_SIZE_N = {n}\n    BLOCK_SIZE_K = {k}"


OTHER_ARRANGEMENT = '''
def arrangement(a, b, c):
    """Same layout as the reference, written with other names and in another order."""
    c_tiles = c.tile((BLOCK_SIZE_M, BLOCK_SIZE_N))
    rows_of_blocks = c_tiles.shape[0]
    cols_of_blocks = c_tiles.shape[1]

    b_tiles = b.tile((BLOCK_SIZE_K, BLOCK_SIZE_N))
    b_columns = b_tiles.tile((-1, 1)).expand((rows_of_blocks, -1))
    b_columns.dtype = b_columns.dtype.squeeze(1)

    a_tiles = a.tile((BLOCK_SIZE_M, BLOCK_SIZE_K))
    a_rows = a_tiles.tile((1, -1)).expand((-1, cols_of_blocks))
    a_rows.dtype = a_rows.dtype.squeeze(0)

    return a_rows, b_columns, c_tiles
'''

OTHER_APPLICATION = '''
def application(a, b, c):
    """A while-free loop with a named tile count and an explicit sum."""
    num_k_tiles = a.shape[0]
    acc = ntl.zeros(c.shape, dtype=ntl.float32)
    for step in range(num_k_tiles):
        partial = ntl.dot(a[step], b[step])
        acc = acc + partial
    c = acc.to(ntl.float16)  # noqa: F841
'''

# Correct with other tiles or in another style: what the grader, the time budget and the
# compile gate must pass.
CORRECT = {
    "tiles_32x32x32": Variant("32x32x32 tiles", (_blocks(32, 32, 32),)),
    "tiles_16x64x32": Variant(
        "16x64x32 tiles (M, N and K tiles all differ)", (_blocks(16, 64, 32),)
    ),
    "tiles_128x64x32": Variant("rectangular 128x64x32 tiles", (_blocks(128, 64, 32),)),
    "tiles_16x128x64": Variant("16x128x64 tiles", (_blocks(16, 128, 64),)),
    "other_style": Variant(
        "other parameter names, helper variables and order",
        (function("arrangement", OTHER_ARRANGEMENT), function("application", OTHER_APPLICATION)),
    ),
    "unsqueezed_indexing": Variant(
        "lhs left unsqueezed and indexed as lhs[0, k] instead",
        (
            (LHS_SQUEEZE, ""),
            (
                f"    {LOOP}\n        {DOT}\n",
                "    # lhs keeps its (1, K tiles) level, so index around the length-1 dimension.\n"
                "    for k in range(lhs.shape[1]):\n"
                "        accumulator += ntl.dot(lhs[0, k], rhs[k])\n",
            ),
        ),
    ),
    "store_in_loop": Variant(
        "the output assigned inside the loop over k: every step stores "
        "the running sum, the last one the whole",
        ((f"{DOT}\n{STORE}", f"{DOT}\n    {STORE}"),),
    ),
    "cast_on_store": Variant(
        "the accumulator cast to float16 where it is assigned to output",
        ((STORE, "    output = accumulator.to(ntl.float16)  # noqa: F841\n"),),
    ),
    "cast_to_output_dtype": Variant(
        "the accumulator cast to output's own dtype where it is assigned",
        ((STORE, "    output = accumulator.to(output.dtype)  # noqa: F841\n"),),
    ),
    "triton_language": Variant(
        "triton.language imported as tl and used where ntl is: "
        "NineToothed generates the same kernel lines",
        (
            (
                "import ninetoothed.language as ntl\n",
                "import ninetoothed.language as ntl\nimport triton.language as tl\n",
            ),
            (ZEROS, "accumulator = tl.zeros(output.shape, dtype=tl.float32)"),
            (DOT, "accumulator += tl.dot(lhs[k], rhs[k])"),
        ),
    ),
    "dot_accumulates": Variant(
        "the running sum passed to ntl.dot as its accumulator, Triton's idiom",
        ((DOT, "accumulator = ntl.dot(lhs[k], rhs[k], accumulator)"),),
    ),
    "while_loop": Variant(
        "a while loop over k with its own counter",
        (
            (
                f"    {LOOP}\n        {DOT}\n",
                "    k = 0\n    while k < lhs.shape[0]:\n"
                "        accumulator += ntl.dot(lhs[k], rhs[k])\n"
                "        k += 1\n",
            ),
        ),
    ),
    "helper_function": Variant(
        "a module helper, called with every argument, computes each step (NineToothed inlines it)",
        (
            (DOT, "accumulator = add_product(accumulator, lhs[k], rhs[k])"),
            appended(
                "\n\ndef add_product(total, a, b):\n"
                '    """One K step: total + a @ b."""\n'
                "    return total + ntl.dot(a, b)\n"
            ),
        ),
    ),
}

# Common mistakes; what each must fail and which hint names it is in the tests that
# grade them (test_grader_verdicts.py, test_gpu_build.py).
MISTAKES = {
    "expand_axis": Variant(
        "lhs expanded over the M blocks and rhs over the N blocks (swapped)",
        (
            (LHS_EXPAND, "lhs_arranged.expand((-1, grid_m))"),
            (RHS_EXPAND, "rhs_arranged.expand((grid_n, -1))"),
        ),
    ),
    "accumulator_in_loop": Variant(
        "the accumulator is created inside the loop over k",
        ((f"    {ZEROS}\n    {LOOP}\n", f"    {LOOP}\n        {ZEROS}\n"),),
    ),
    "assign_not_add": Variant(
        "`=` instead of `+=` in the loop over k", ((DOT, DOT.replace("+=", "=")),)
    ),
    "missing_squeeze": Variant("lhs's dtype is not squeezed", ((LHS_SQUEEZE, ""),)),
    "k_tail_whole_tiles": Variant(
        "only whole K tiles are kept (K // BLOCK_SIZE_K), dropping the K tail",
        (
            (
                f"{LHS_TILE}.tile((1, -1))",
                f"{LHS_TILE}\n    lhs_arranged = lhs_arranged[:, : lhs.shape[1] // block_size_k]"
                ".tile((1, -1))",
            ),
            (
                f"{RHS_TILE}.tile((-1, 1))",
                f"{RHS_TILE}\n    rhs_arranged = rhs_arranged[: rhs.shape[0] // block_size_k, :]"
                ".tile((-1, 1))",
            ),
        ),
    ),
    "loop_stops_early": Variant(
        "the loop over k stops one tile early (range(lhs.shape[0] - 1))",
        ((LOOP, "for k in range(lhs.shape[0] - 1):"),),
    ),
    "floor_mode": Variant(
        "floor_mode=True on the lhs and rhs tilings: partial tiles in M, N and K are dropped",
        (
            (LHS_TILE, LHS_TILE[:-1] + ", floor_mode=True)"),
            (RHS_TILE, RHS_TILE[:-1] + ", floor_mode=True)"),
        ),
    ),
    "hard_coded": Variant(
        "lhs expanded to a hard-coded 4 N blocks", ((LHS_EXPAND, "lhs_arranged.expand((-1, 4))"),)
    ),
    "tile_shape": Variant(
        "rhs tiled as (BLOCK_SIZE_N, BLOCK_SIZE_K), with BLOCK_SIZE_K = 32 so the swap shows",
        (_blocks(64, 64, 32), (RHS_TILE, "rhs.tile((block_size_n, block_size_k))")),
    ),
    "rhs_tile_order": Variant(
        "rhs tiled as (block_size_n, block_size_k) at the default 64x64x64: "
        "right only while the two sizes are equal (block_order)",
        ((RHS_TILE, "rhs.tile((block_size_n, block_size_k))"),),
    ),
    "tiles_written_in": Variant(
        "every tile(...) given 64s instead of the block sizes (fixed_tiles)",
        (
            (LHS_TILE, "lhs.tile((64, 64))"),
            (RHS_TILE, "rhs.tile((64, 64))"),
            (OUTPUT_TILE, "output.tile((64, 64))"),
        ),
    ),
    "wrong_dtype": Variant(
        "nt_gemm returns a float32 tensor",
        ((RETURN, RETURN.replace("return output", "return output.float()")),),
    ),
    "placeholder": Variant(
        "a NotImplementedError placeholder left in application()",
        ((STORE, STORE + '    raise NotImplementedError("application() is not filled in yet")\n'),),
    ),
    "fp16_accumulator": Variant(
        "a float16 accumulator (accumulator_dtype; does not build)",
        ((ZEROS, ZEROS.replace("float32", "float16")),),
    ),
    "fp16_running_sum": Variant(
        "a float16 running sum: fails the cancellation case",
        ((ZEROS, ZEROS.replace("float32", "float16")), (DOT, DOT + ".to(ntl.float16)")),
    ),
    "dot_swapped": Variant(
        "ntl.dot(rhs[k], lhs[k]) (dot_order)", ((DOT, "accumulator += ntl.dot(rhs[k], lhs[k])"),)
    ),
    "dot_swapped_rect_tiles": Variant(
        "ntl.dot(rhs[k], lhs[k]) with 64x64x32 tiles (does not build)",
        ((DOT, "accumulator += ntl.dot(rhs[k], lhs[k])"), _blocks(64, 64, 32)),
    ),
    "output_transposed": Variant(
        "the accumulator stored transposed (output_tile)",
        ((STORE, STORE.replace("= accumulator ", "= ntl.trans(accumulator) ")),),
    ),
    "expand_by_size": Variant(
        "lhs expanded by the output's width N, not its block count: "
        "the grids cannot line up, so no case launches",
        ((LHS_EXPAND, "lhs_arranged.expand((-1, output.shape[1]))"),),
    ),
    # A matrix size where a block count or a block size belongs (size_for_count): the
    # arrangement's own calls are named, whichever tensor the size was read from.
    "expand_rhs_by_size": Variant(
        "rhs expanded by the output's height M, not its block count",
        ((RHS_EXPAND, "rhs_arranged.expand((output.shape[0], -1))"),),
    ),
    "expand_lhs_by_rhs_width": Variant(
        "lhs expanded by rhs's width N, not the N block count",
        ((LHS_EXPAND, "lhs_arranged.expand((-1, rhs.shape[1]))"),),
    ),
    "expand_rhs_by_lhs_height": Variant(
        "rhs expanded by lhs's height M, not the M block count",
        ((RHS_EXPAND, "rhs_arranged.expand((lhs.shape[0], -1))"),),
    ),
    "expand_lhs_by_k": Variant(
        "lhs expanded by its own width K where the N block count belongs",
        ((LHS_EXPAND, "lhs_arranged.expand((-1, lhs.shape[1]))"),),
    ),
    "expand_rhs_by_k": Variant(
        "rhs expanded by its own height K where the M block count belongs",
        ((RHS_EXPAND, "rhs_arranged.expand((rhs.shape[0], -1))"),),
    ),
    "tile_lhs_by_m": Variant(
        "lhs tiled with M where BLOCK_SIZE_M belongs",
        ((LHS_TILE, "lhs.tile((lhs.shape[0], block_size_k))"),),
    ),
    "tile_rhs_by_n": Variant(
        "rhs tiled with N where BLOCK_SIZE_N belongs",
        ((RHS_TILE, "rhs.tile((block_size_k, rhs.shape[1]))"),),
    ),
    "tile_output_by_n": Variant(
        "the output tiled with N where BLOCK_SIZE_N belongs",
        ((OUTPUT_TILE, "output.tile((block_size_m, output.shape[1]))"),),
    ),
    # NineToothed's 7 stages on an H200 need 448 KiB of shared memory at 128^3 (measured on
    # the H200, 2026-11-30: OutOfResources at every size divisible by 16).
    "tiles_128x128x128": Variant(
        "128x128x128 tiles: more shared memory than an H200 has (gpu_resources)",
        (_blocks(128, 128, 128),),
    ),
}

# The first hour's mistakes, each named from its line (grader.core.source_mistakes) or from
# the arranged levels (grader.core.layout); which key names each, test_first_mistakes.py says.
FIRST_MISTAKES = {
    "returns_accumulator": Variant(
        "application() returns the accumulator instead of assigning it to output",
        ((STORE, "    return accumulator\n"),),
    ),
    "output_never_assigned": Variant("application() never assigns output", ((STORE, ""),)),
    "lhs_not_tiled_along_k": Variant(
        "lhs tiled (BLOCK_SIZE_M, -1): all of K in one tile",
        ((f"{LHS_TILE}.tile((1, -1))", "lhs.tile((block_size_m, -1))"),),
    ),
    "rhs_not_tiled_along_k": Variant(
        "rhs tiled (-1, BLOCK_SIZE_N): all of K in one tile",
        ((f"{RHS_TILE}.tile((-1, 1))", "rhs.tile((-1, block_size_n))"),),
    ),
    "lhs_squeeze_axis": Variant(
        "lhs's dtype squeezed along 1, which holds its K tiles",
        ((LHS_SQUEEZE, LHS_SQUEEZE.replace("squeeze(0)", "squeeze(1)")),),
    ),
    "rhs_squeeze_axis": Variant(
        "rhs's dtype squeezed along 0, which holds its K tiles",
        ((RHS_SQUEEZE, RHS_SQUEEZE.replace("squeeze(1)", "squeeze(0)")),),
    ),
    "lhs_grouped_by_column": Variant(
        "lhs's tiles grouped by column, .tile((-1, 1))",
        ((f"{LHS_TILE}.tile((1, -1))", f"{LHS_TILE}.tile((-1, 1))"),),
    ),
    "rhs_grouped_by_row": Variant(
        "rhs's tiles grouped by row, .tile((1, -1))",
        ((f"{RHS_TILE}.tile((-1, 1))", f"{RHS_TILE}.tile((1, -1))"),),
    ),
    "zeros_without_dtype": Variant(
        "ntl.zeros(output.shape) with no dtype", ((ZEROS, "accumulator = ntl.zeros(output.shape)"),)
    ),
    "zeros_of_output_dtype": Variant(
        "the accumulator made with output's dtype, float16",
        ((ZEROS, "accumulator = ntl.zeros(output.shape, dtype=output.dtype)"),),
    ),
    "loop_over_shape_1": Variant(
        "the loop over k runs over range(lhs.shape[1])", ((LOOP, "for k in range(lhs.shape[1]):"),)
    ),
    "dot_rhs_fixed": Variant(
        "ntl.dot(lhs[k], rhs[0])", ((DOT, "accumulator += ntl.dot(lhs[k], rhs[0])"),)
    ),
    "dot_lhs_fixed": Variant(
        "ntl.dot(lhs[0], rhs[k])", ((DOT, "accumulator += ntl.dot(lhs[0], rhs[k])"),)
    ),
    "dot_without_loop": Variant(
        "one ntl.dot(lhs[0], rhs[0]) and no loop over k",
        ((f"    {LOOP}\n        {DOT}\n", "    accumulator += ntl.dot(lhs[0], rhs[0])\n"),),
    ),
    "dot_whole_sequences": Variant(
        "ntl.dot(lhs, rhs): the whole K sequences, not the k-th tiles",
        ((DOT, "accumulator += ntl.dot(lhs, rhs)"),),
    ),
    "python_matmul": Variant(
        "lhs[k] @ rhs[k] instead of ntl.dot", ((DOT, "accumulator += lhs[k] @ rhs[k]"),)
    ),
    "torch_matmul": Variant(
        "torch.matmul inside application()", ((DOT, "accumulator += torch.matmul(lhs[k], rhs[k])"),)
    ),
    "accumulator_of_lhs_shape": Variant(
        "the accumulator made with lhs.shape",
        ((ZEROS, ZEROS.replace("output.shape", "lhs.shape")),),
    ),
    "accumulator_with_block_k": Variant(
        "the accumulator made (BLOCK_SIZE_M, BLOCK_SIZE_K)",
        ((ZEROS, ZEROS.replace("output.shape", "(BLOCK_SIZE_M, BLOCK_SIZE_K)")),),
    ),
    # A global of the file inside application(): the generated kernel has no such name, so
    # the kit's check refuses it as a name bound nowhere (failed and named, not flagged).
    "accumulator_with_global_blocks": Variant(
        "the accumulator made (BLOCK_SIZE_M, BLOCK_SIZE_N), the module's block sizes",
        ((ZEROS, ZEROS.replace("output.shape", "(BLOCK_SIZE_M, BLOCK_SIZE_N)")),),
    ),
    "global_constant_in_application": Variant(
        "a module constant, ALPHA = 1.0, scales the result in application()",
        (
            (STORE, "    output = accumulator * ALPHA  # noqa: F841\n"),
            appended("ALPHA = 1.0  # scales the result\n"),
        ),
    ),
    # Right on the interpreter; on a GPU it prints in every program and runs past the limit.
    "debug_print": Variant(
        "a debugging print left in the loop over k (Triton's device_print)",
        ((DOT, f'{DOT}\n        print("k =", k)'),),
    ),
    # A name imported from the language, not the module: NineToothed rewrites only ``tl.dot``.
    "dot_imported_by_name": Variant(
        "`from triton.language import dot`, then dot(lhs[k], rhs[k]): the kernel has no `dot`",
        (
            (
                "import ninetoothed.language as ntl\n",
                "import ninetoothed.language as ntl\nfrom triton.language import dot\n",
            ),
            (DOT, "accumulator += dot(lhs[k], rhs[k])"),
        ),
    ),
    # NineToothed inlines a helper without its default values: a parameter left to its
    # default is a name bound nowhere in the kernel (failed and named, not flagged).
    "helper_default_argument": Variant(
        "a module helper whose scale=1 default the call leaves out",
        (
            (DOT, "accumulator = add_product(accumulator, lhs[k], rhs[k])"),
            appended(
                "\n\ndef add_product(total, a, b, "
                "scale=1):\n"
                "    return total + ntl.dot(a, b) * "
                "scale\n"
            ),
        ),
    ),
    "returns_two": Variant(
        "arrangement() returns lhs's and rhs's arranged tensors only",
        ((ARRANGED, "return lhs_arranged, rhs_arranged"),),
    ),
    "returns_list": Variant(
        "arrangement() returns a list",
        ((ARRANGED, "return [lhs_arranged, rhs_arranged, output_arranged]"),),
    ),
    "returns_dict": Variant(
        "arrangement() returns a dict",
        (
            (
                ARRANGED,
                "return {'lhs': lhs_arranged, 'rhs': rhs_arranged, 'output': output_arranged}",
            ),
        ),
    ),
    "returns_in_other_order": Variant(
        "arrangement() returns output's arranged tensor first",
        ((ARRANGED, "return output_arranged, lhs_arranged, rhs_arranged"),),
    ),
}

VARIANTS = {**CORRECT, **MISTAKES, **FIRST_MISTAKES}


if __name__ == "__main__":
    class_command(VARIANTS, "grader.tests.build_variants", "the kit's kernel variants")
