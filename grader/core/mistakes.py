"""The common mistakes: each declared once, with its hint in English and Chinese and
the evidence that finds it.

Cases name the mistake they target; the diagnosis names the mistake it found.
Both refer to the keys below, so the docs, the feedback and the tests agree.
``grader.core.diagnosis.explain`` takes every hint from here: adding a mistake is
one declaration below, the code that reports its key, and a test
(``grader/tests/test_mistakes.py`` fails on a key declared but never reported,
or reported but never declared).
"""

import dataclasses

# Where the evidence for a mistake comes from; explain() reads them in this order.
FILE = "file"  # the file cannot run at all (grader.core.loading, checks.error_verdict)
SOURCE = "source"  # a line of the file itself, read with ast (grader.core.source_mistakes)
LAYOUT = "layout"  # the arranged tensors' levels (grader.core.layout.inspect_arrangement)
OUTPUT = "output"  # one case's verdict names it (grader.core.checks: output, error or build)
PATTERN = "pattern"  # which cases fail (diagnosis._patterns), or the cases that target it
SOURCES = (FILE, SOURCE, LAYOUT, OUTPUT, PATTERN)

# What a hint explains (``Mistake.explains``), in the words of the mutation corpus that
# measures the hints (grader/tests/diagnosis_mutants.py, docs/mutation-table.md): each entry
# is a subject, the part of the GEMM a changed statement builds, as a glob (``*.expand``:
# lhs's or rhs's expand(); ``step``: the body of the loop over k), with the kinds of change
# it covers after a slash where not all (``step/argument_order``). A hint shown for a change
# that none of its entries covers, or whose evidence names another line, misleads.


@dataclasses.dataclass(frozen=True)
class Mistake:
    key: str
    title: str
    title_zh: str
    en: str
    zh: str
    found_by: tuple = ()  # SOURCES that can name it
    evidence_on_last_line: bool = False  # a check states its evidence on the message's last line
    explains: tuple = ()  # the changes of a correct file it names (see EXPLAINS below)


MISTAKES = {
    mistake.key: mistake
    for mistake in [
        Mistake(
            "not_implemented",
            "placeholder left in",
            "占位异常未删除",
            "A `raise NotImplementedError(...)` placeholder is still in arrangement() or "
            "application(). Replace it with your code.",
            "arrangement() 或 application() 中仍保留着 `raise NotImplementedError(...)` 占位异常，"
            "请删除它并写上你的实现。",
            found_by=(FILE,),
        ),
        Mistake(
            "import_error",
            "the file does not import",
            "文件无法导入",
            "Python could not import your file, so no case could run. Fix the error shown "
            "(a syntax error, a misspelt name, a missing import) and run the tests again.",
            "Python 无法导入你的文件，所以没有任何用例能运行。先修复显示的错误（语法错误、"
            "名字拼写、缺少 import 等），再重新运行测试。",
            found_by=(FILE,),
            explains=("*",),
        ),
        Mistake(
            "expand_axis",
            "expanded along the wrong axis",
            "expand 的方向反了",
            "lhs must be repeated across the output's N blocks (output_arranged.shape[1]) and "
            "rhs across its M blocks (output_arranged.shape[0]). Squares hide a swap; "
            "non-square shapes reveal it.",
            "lhs 应沿输出的 N 方向块数（output_arranged.shape[1]）expand，rhs 应沿 M 方向块数"
            "（output_arranged.shape[0]）expand。方阵会掩盖两者写反，非方阵会暴露。",
            found_by=(LAYOUT, PATTERN),
            explains=("*.expand", "grid"),
        ),
        Mistake(
            "size_for_count",
            "a matrix size where a block count or block size belongs",
            "在该填块数或分块大小的地方用了矩阵尺寸",
            "A call in arrangement() gets a matrix size (M, N or K, read as `lhs.shape[...]`, "
            "`rhs.shape[...]` or `output.shape[...]`) where a number of blocks or a block size "
            "belongs. expand() repeats a tensor once per block: take the counts from the tiled "
            "output (`output_arranged.shape[0]`, `output_arranged.shape[1]`). tile() takes the "
            "block sizes (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K), or -1 to keep every tile "
            "along a dimension.",
            "arrangement() 中有一次调用，在应当填块数或分块大小的地方填了矩阵的尺寸（M、N 或 K，"
            "即 `lhs.shape[...]`、`rhs.shape[...]` 或 `output.shape[...]`）。expand() 是按块重复："
            "块数应取自分块后的输出（`output_arranged.shape[0]`、`output_arranged.shape[1]`）。"
            "tile() 接收的是分块大小（BLOCK_SIZE_M、BLOCK_SIZE_N、BLOCK_SIZE_K），或者用 -1 "
            "表示保留该维上的全部块。",
            found_by=(LAYOUT,),
            explains=("*.expand", "*.tile", "*.group", "grid"),
        ),
        Mistake(
            "missing_squeeze",
            "a squeeze is missing",
            "少了 squeeze",
            "Each program's lhs should be a sequence of (BLOCK_SIZE_M, BLOCK_SIZE_K) tiles and "
            "rhs a sequence of (BLOCK_SIZE_K, BLOCK_SIZE_N) tiles. After grouping, squeeze the "
            "length-1 dimension of `.dtype`: squeeze(0) for lhs, squeeze(1) for rhs.",
            "每个程序拿到的 lhs 应是 (BLOCK_SIZE_M, BLOCK_SIZE_K) 块的序列，rhs 应是 "
            "(BLOCK_SIZE_K, BLOCK_SIZE_N) 块的序列。分组之后要对 `.dtype` 去掉长度为 1 的维："
            "lhs 用 squeeze(0)，rhs 用 squeeze(1)。",
            found_by=(LAYOUT,),
            explains=("*.squeeze",),
        ),
        Mistake(
            "tile_shape",
            "tiles of the wrong shape",
            "tile 形状不对",
            "The tiles do not line up: lhs tiles must be (BLOCK_SIZE_M, BLOCK_SIZE_K), rhs tiles "
            "(BLOCK_SIZE_K, BLOCK_SIZE_N) and output tiles (BLOCK_SIZE_M, BLOCK_SIZE_N).",
            "块的形状对不上：lhs 块应为 (BLOCK_SIZE_M, BLOCK_SIZE_K)，rhs 块应为 "
            "(BLOCK_SIZE_K, BLOCK_SIZE_N)，output 块应为 (BLOCK_SIZE_M, BLOCK_SIZE_N)。",
            found_by=(LAYOUT,),
            explains=("*.tile",),
        ),
        Mistake(
            "block_order",
            "right only while the block sizes are equal",
            "只在各分块大小相等时才正确",
            "Right at your own block sizes, wrong when the grader builds your arrangement() "
            "and application() at other tiles of the course's autotune range (such as "
            "128x64x32): two block sizes are swapped somewhere, which equal sizes hide. rhs "
            "is K x N, so its tiles are (BLOCK_SIZE_K, BLOCK_SIZE_N); lhs is M x K, so "
            "(BLOCK_SIZE_M, BLOCK_SIZE_K); the output (BLOCK_SIZE_M, BLOCK_SIZE_N).",
            "在你自己的分块大小下正确，但评分器用课程自动调优范围内的其他分块（例如 128x64x32）"
            "重新构建你的 arrangement() 和 application() 时出错：某处把两个分块大小写反了，"
            "分块大小相等时看不出来。rhs 是 K x N，它的分块应为 (BLOCK_SIZE_K, BLOCK_SIZE_N)；"
            "lhs 是 M x K，分块为 (BLOCK_SIZE_M, BLOCK_SIZE_K)；输出为 "
            "(BLOCK_SIZE_M, BLOCK_SIZE_N)。",
            found_by=(PATTERN,),
            explains=("*.tile/argument_order,name",),
        ),
        Mistake(
            "fixed_tiles",
            "tile sizes written as numbers",
            "tile 大小写成了具体数字",
            "Your arrangement lays out the same tiles whatever block sizes it is given, so "
            "the grader cannot build it at others. Write the block sizes in tile(...) "
            "(block_size_m/n/k, or BLOCK_SIZE_M/N/K), never the numbers themselves.",
            "无论给出什么分块大小，你的 arrangement 都按同样的分块划分，评分器因此无法用其他"
            "分块大小构建它。请在 tile(...) 中使用分块大小（block_size_m/n/k 或 "
            "BLOCK_SIZE_M/N/K），不要直接写数字。",
            found_by=(OUTPUT,),
            explains=("*.tile", "*.group"),
        ),
        Mistake(
            "tail_mask",
            "partial tiles mishandled",
            "尾块处理不当",
            "Shapes that are not multiples of the block sizes fail. Let tile() produce the "
            "partial edge tiles (no floor_mode, no manual offsets) so loads and stores stay masked.",
            "形状不是分块大小整数倍时失败。让 tile() 自动产生边缘的不完整块（不要用 floor_mode，"
            "也不要手工计算偏移），读取和写回才会带掩码。",
            found_by=(SOURCE, LAYOUT, PATTERN),
            explains=("*.tile/ninetoothed_call", "*.expand/floor_division"),
        ),
        Mistake(
            "hard_coded",
            "a hard-coded shape or block count",
            "写死了形状或块数",
            "The arrangement only fits some sizes: take block counts from the arranged tensors "
            "(output_arranged.shape[0] and [1]) rather than writing numbers such as 2 or 4.",
            "排布只适配部分尺寸：块数应取自排布后的张量（output_arranged.shape[0] 与 [1]），"
            "不要写死 2、4 这样的数字。",
            found_by=(LAYOUT,),
            explains=("*.expand/constant", "grid/constant"),
        ),
        Mistake(
            "accumulator",
            "accumulator reset or assigned",
            "累加器被重置或直接赋值",
            "Right when K fits in one tile, wrong with several: create the float32 "
            "accumulator once, before the loop over k, and add to it with `+=`.",
            "K 只有一段时正确、多段时出错：float32 累加器要在 k 循环之前只创建一次，"
            "循环内用 `+=` 累加，而不是 `=`。",
            found_by=(SOURCE, OUTPUT, PATTERN),
            evidence_on_last_line=True,
            explains=("step/operator,store_form", "accumulator/deleted_statement"),
        ),
        Mistake(
            "accumulator_dtype",
            "the accumulator is not float32",
            "累加器不是 float32",
            "Create the accumulator as float32 (`ntl.zeros(..., dtype=ntl.float32)`) and keep "
            "it float32 inside the loop: Triton's compiler rejects a float16 accumulator that "
            "ntl.dot's float32 products re-type, and a sum kept in float16 loses the small terms "
            "of a long K. Convert to float16 only when the tile is written.",
            "累加器要用 float32 创建（`ntl.zeros(..., dtype=ntl.float32)`），循环内也保持 "
            "float32：ntl.dot 的结果是 float32，若累加器是 float16，Triton 编译器会拒绝；若在 "
            "float16 中求和，长 K 上的小项会被舍掉。只在写回时再转成 float16。",
            found_by=(SOURCE, OUTPUT),
            evidence_on_last_line=True,
            explains=("accumulator/dtype,call_argument", "step/dtype"),
        ),
        Mistake(
            "dot_order",
            "ntl.dot's operands are swapped",
            "ntl.dot 的两个操作数写反",
            "Each program computes its output tile as the sum over k of lhs[k] @ rhs[k]: "
            "`ntl.dot(lhs[k], rhs[k])`, lhs first. The other order only compiles when all three "
            "block sizes are equal, and then multiplies the wrong tiles.",
            "每个程序的输出块是对 k 求和的 lhs[k] @ rhs[k]：应写 `ntl.dot(lhs[k], rhs[k])`，"
            "lhs 在前。顺序反了只有在三个分块大小都相等时才能编译，而且乘的是错误的块。",
            found_by=(OUTPUT,),
            explains=("step/argument_order",),
        ),
        Mistake(
            "output_tile",
            "the result lands in the wrong output tile",
            "结果写进了错误的输出块",
            "Each output tile holds a correct product, but of another tile, or transposed. "
            "Program (i, j) must write the product of lhs row block i and rhs column block j "
            "into output tile (i, j), as it is: keep lhs repeated along N, rhs along M, and "
            "assign `output = accumulator` without transposing.",
            "每个输出块里的乘积本身是对的，但属于别的块，或者被转置了。程序 (i, j) 必须把 lhs 第 i "
            "行块与 rhs 第 j 列块的乘积原样写入输出块 (i, j)：lhs 沿 N 方向 expand，rhs 沿 M 方向"
            " expand，直接 `output = accumulator`，不要转置。",
            found_by=(OUTPUT,),
            explains=("store", "grid", "*.expand"),
        ),
        Mistake(
            "k_tail",
            "the K tail is dropped",
            "丢了 K 的尾块",
            "The last K columns are never added. If only shapes whose K is not a multiple of "
            "BLOCK_SIZE_K fail, the number of K tiles rounds down: keep the default tiling and "
            "masked loads, so that ceil(K / BLOCK_SIZE_K) tiles include the partial last one. "
            "If every K longer than one tile fails, the loop stops early: it must run over "
            "range(lhs.shape[0]).",
            "最后几列 K 没有参与累加。如果只有 K 不能被 BLOCK_SIZE_K 整除时失败，说明 K 块数被向下取整了："
            "保持默认的分块与带掩码读取，让 ceil(K / BLOCK_SIZE_K) 个块包含最后那段不完整的块。"
            "如果只要 K 超过一个块就失败，说明循环提前结束了：循环必须遍历完整的 range(lhs.shape[0])。",
            found_by=(LAYOUT, OUTPUT, PATTERN),
            evidence_on_last_line=True,
            explains=("loop", "*.tile/ninetoothed_call", "*.group"),
        ),
        Mistake(
            "wrapper_broken",
            "nt_gemm() raises before its kernel runs",
            "nt_gemm() 在 kernel 运行之前就出错了",
            "Your nt_gemm() raised an error of its own Python before its kernel ran: the "
            "mistake is in nt_gemm() or the helpers it calls, not in arrangement() or "
            "application(). They come with the handout: restore them as they were.",
            "你的 nt_gemm() 在 kernel 运行之前，就在它自己的 Python 代码里抛出了异常：错误在 "
            "nt_gemm() 或它调用的辅助函数里，不在 arrangement() 或 application() 里。这些是讲义"
            "原有的代码：请恢复原样。",
            found_by=(OUTPUT,),
            explains=("wrapper",),
        ),
        Mistake(
            "wrong_dtype",
            "output of the wrong dtype or shape",
            "输出的 dtype 或形状不对",
            "nt_gemm must return a new float16 tensor of shape (M, N); accumulate in float32 "
            "inside the kernel only.",
            "nt_gemm 必须返回一个新的 float16 张量，形状为 (M, N)；float32 只用于 kernel 内部累加。",
            found_by=(OUTPUT,),
            explains=("wrapper",),
        ),
        Mistake(
            "unwritten_output",
            "some output elements are never written",
            "部分输出从未写入",
            "Part of the output is never written. NineToothed writes an output tile only where "
            "application() assigns it: end application() with `output = accumulator` (a "
            "`return accumulator` is ignored), and let exactly one program cover every (i, j) "
            "output tile.",
            "输出有一部分从未被写入。NineToothed 只在 application() 给 output 赋值的地方写回输出块："
            "application() 最后要写 `output = accumulator`（`return accumulator` 会被忽略），"
            "并且每个输出块 (i, j) 都要恰好由一个程序负责。",
            found_by=(SOURCE, OUTPUT),
            explains=("store",),
        ),
        Mistake(
            "nondeterministic",
            "results differ between runs",
            "两次运行结果不同",
            "The same inputs gave different bits on two runs. Each output tile should be "
            "computed by one program, with no shared state between calls.",
            "相同输入两次运行结果不同。每个输出块应只由一个程序计算，两次调用之间不应共享状态。",
            found_by=(OUTPUT,),
        ),
        Mistake(
            "gpu_resources",
            "the kernel needs more than the GPU has",
            "kernel 需要的资源超过 GPU 上限",
            "The kernel compiles but cannot launch on the course's GPU: its tiles need more "
            "shared memory (or registers) per block than the GPU offers. Use smaller block "
            "sizes; the guide's 64 x 64 x 64 fits.",
            "kernel 可以编译，但在课程的 GPU 上无法启动：每个块需要的共享内存（或寄存器）超过了 GPU "
            "的上限。请减小分块大小；指南中的 64 x 64 x 64 可以放下。",
            found_by=(OUTPUT,),
        ),
        Mistake(
            "grid_mismatch",
            "the arranged tensors do not line up",
            "排布后的张量对不上",
            "Every arranged tensor must have the output's block grid as its outer shape: "
            "(ceil(M / BLOCK_SIZE_M), ceil(N / BLOCK_SIZE_N)). Inside, lhs holds one row of "
            "K tiles and rhs one column of K tiles. Print the `.shape` of each level of your "
            "arranged tensors to see where they differ.",
            "三个排布后的张量，最外层形状都必须是输出的块网格 (ceil(M / BLOCK_SIZE_M), "
            "ceil(N / BLOCK_SIZE_N))；其内层，lhs 是一行 K 块，rhs 是一列 K 块。"
            "逐层打印它们的 `.shape`，找出哪里不一致。",
            found_by=(LAYOUT, OUTPUT),
            explains=("*.*", "grid", "return"),
        ),
        Mistake(
            "arrangement_return",
            "arrangement() does not return its three tensors in order",
            "arrangement() 没有按顺序返回三个张量",
            "arrangement() must return a tuple of exactly three arranged tensors, in the order "
            "of its parameters: `return lhs_arranged, rhs_arranged, output_arranged`. "
            "NineToothed hands them to application(lhs, rhs, output) by position: a list, a "
            "dict, two tensors or another order do not build, or pair the wrong tensors.",
            "arrangement() 必须返回恰好三个排布后的张量组成的元组，顺序与参数一致："
            "`return lhs_arranged, rhs_arranged, output_arranged`。NineToothed 按位置把它们交给 "
            "application(lhs, rhs, output)：返回列表、字典、两个张量或别的顺序，要么无法构建，"
            "要么配错张量。",
            found_by=(SOURCE,),
            explains=("return",),
        ),
        Mistake(
            "arrangement_error",
            "arrangement() raises an error",
            "arrangement() 抛出了异常",
            "NineToothed runs arrangement() on symbolic tensors before it builds any kernel, "
            "and there your arrangement() raises: the line and Python's own message are "
            "below. Read it as any Python error: a name used before it is assigned, a call "
            "given arguments it does not take, a division by zero.",
            "NineToothed 在构建 kernel 之前，会先在符号张量上运行 arrangement()，你的 "
            "arrangement() 在这里抛出了异常：出错的行和 Python 自己的报错在下面。按普通的 "
            "Python 错误来读：名字在赋值之前就用了，调用传了它不接受的参数，除以零，等等。",
            found_by=(LAYOUT,),
            explains=("*.*", "grid", "return"),
        ),
        Mistake(
            "k_untiled",
            "lhs or rhs is not tiled along K",
            "lhs 或 rhs 没有沿 K 分块",
            "Each program walks K one tile at a time: tile lhs by (BLOCK_SIZE_M, BLOCK_SIZE_K) "
            "and rhs by (BLOCK_SIZE_K, BLOCK_SIZE_N), then group the K tiles, `.tile((1, -1))` "
            "for lhs and `.tile((-1, 1))` for rhs. A -1 in the first tile() puts all of K in "
            "one tile, whose size is no block size, and NineToothed cannot build it.",
            "每个程序按块遍历 K：lhs 按 (BLOCK_SIZE_M, BLOCK_SIZE_K) 分块，rhs 按 "
            "(BLOCK_SIZE_K, BLOCK_SIZE_N) 分块，再把 K 方向的块分组：lhs 用 `.tile((1, -1))`，"
            "rhs 用 `.tile((-1, 1))`。第一次 tile() 里写 -1 会把整个 K 放进一个块，它的大小不是"
            "分块大小，NineToothed 无法构建。",
            found_by=(LAYOUT,),
            explains=("lhs.tile", "rhs.tile", "*.group"),
        ),
        Mistake(
            "group_axis",
            "the K tiles are grouped along the wrong axis",
            "K 块的分组方向反了",
            "lhs groups each row of its tiles, `.tile((1, -1))`, so that a program gets every K "
            "tile of its M block; rhs groups each column, `.tile((-1, 1))`. Grouped the other "
            "way, a program gets a column of lhs tiles (or a row of rhs tiles), and the grid "
            "no longer matches the output's.",
            "lhs 要把每一行块分成一组，`.tile((1, -1))`，这样每个程序拿到它那个 M 块的全部 K 块；"
            "rhs 要把每一列分成一组，`.tile((-1, 1))`。分组方向反了，程序拿到的是 lhs 的一列块"
            "（或 rhs 的一行块），网格也与输出对不上。",
            found_by=(LAYOUT,),
            explains=("*.group",),
        ),
        Mistake(
            "group_size",
            "the K tiles are not grouped whole",
            "K 块没有整行（整列）分组",
            "After the first tile(), a second one groups the K tiles, so that each program "
            "gets every K tile of its block: a whole row of lhs's tiles, `.tile((1, -1))`, and "
            "a whole column of rhs's, `.tile((-1, 1))`. Other group sizes hand a program some "
            "K tiles only, or several rows of them.",
            "第一次 tile() 之后，第二次 tile() 把 K 块分组，让每个程序拿到它那个块的全部 K 块："
            "lhs 按整行分组，`.tile((1, -1))`，rhs 按整列分组，`.tile((-1, 1))`。别的分组大小会"
            "让一个程序只拿到部分 K 块，或者拿到好几行。",
            found_by=(LAYOUT,),
            explains=("*.group",),
        ),
        Mistake(
            "squeeze_axis",
            "the squeeze removes the K tiles",
            "squeeze 去掉了 K 块",
            "After grouping, each program's lhs is (1, number of K tiles) and rhs (number of K "
            "tiles, 1): squeeze the length-1 dimension, squeeze(0) for lhs and squeeze(1) for "
            "rhs. Squeezing the other one leaves a single K tile, so only a K that fits in "
            "one tile comes out right.",
            "分组之后，每个程序的 lhs 形状是 (1, K 块数)，rhs 是 (K 块数, 1)：要去掉长度为 1 的"
            "那一维，lhs 用 squeeze(0)，rhs 用 squeeze(1)。去掉另一维只会剩下一个 K 块，于是只有 "
            "K 不超过一个块时结果才对。",
            found_by=(LAYOUT,),
            explains=("*.squeeze",),
        ),
        Mistake(
            "k_loop_bound",
            "the loop over k has the wrong bound",
            "k 循环的范围不对",
            "Inside application(), lhs and rhs are 1-D sequences of K tiles (after the "
            "squeeze): loop `for k in range(lhs.shape[0])`. They have no shape[1], so the "
            "kernel does not build.",
            "在 application() 里，lhs 和 rhs 是一维的 K 块序列（squeeze 之后）：循环写 "
            "`for k in range(lhs.shape[0])`。它们没有 shape[1]，kernel 因此无法构建。",
            found_by=(SOURCE,),
            explains=("loop",),
        ),
        Mistake(
            "k_loop_range",
            "the loop over k skips K tiles",
            "k 循环漏掉了 K 块",
            "The loop must visit every K tile once, from the first: `for k in range(lhs.shape[0])`. "
            "A later start or an earlier stop leaves K tiles out of the sum, a stop past the "
            "end adds tiles that do not exist, and a step over tiles skips some.",
            "循环必须从第一个 K 块开始，把每个 K 块恰好访问一次：`for k in range(lhs.shape[0])`。"
            "开始得晚或结束得早，会有 K 块没加进和里；结束得太晚会加上不存在的块；步长大于 1 "
            "会跳过一些块。",
            found_by=(SOURCE,),
            explains=("loop",),
        ),
        Mistake(
            "len_of_tiles",
            "len() of a tile sequence",
            "对块序列用了 len()",
            "application() becomes a Triton kernel, where a sequence of tiles has no Python "
            "length: the number of K tiles is `lhs.shape[0]`.",
            "application() 会变成 Triton kernel，块序列在那里没有 Python 的长度：K 块的个数是 "
            "`lhs.shape[0]`。",
            found_by=(SOURCE,),
            explains=("loop", "step"),
        ),
        Mistake(
            "elementwise_product",
            "`*` between tiles multiplies element by element",
            "块之间的 `*` 是逐元素相乘",
            "In application(), `*` between two tiles multiplies them element by element, and "
            "builds only where their shapes agree; the product of two tiles is ntl.dot: "
            "`accumulator += ntl.dot(lhs[k], rhs[k])`.",
            "在 application() 里，两个块之间的 `*` 是逐元素相乘，而且只有形状相同时才能构建；"
            "两个块的矩阵乘积要用 ntl.dot：`accumulator += ntl.dot(lhs[k], rhs[k])`。",
            found_by=(SOURCE,),
            explains=("step",),
        ),
        Mistake(
            "transposed_tile",
            "an input tile is transposed",
            "输入的块被转置了",
            "The arrangement hands application() lhs tiles of (BLOCK_SIZE_M, BLOCK_SIZE_K) and "
            "rhs tiles of (BLOCK_SIZE_K, BLOCK_SIZE_N), as ntl.dot takes them: "
            "`ntl.dot(lhs[k], rhs[k])`, with no ntl.trans.",
            "排布交给 application() 的 lhs 块是 (BLOCK_SIZE_M, BLOCK_SIZE_K)，rhs 块是 "
            "(BLOCK_SIZE_K, BLOCK_SIZE_N)，正是 ntl.dot 需要的形状：`ntl.dot(lhs[k], rhs[k])`，"
            "不需要 ntl.trans。",
            found_by=(SOURCE,),
            explains=("step",),
        ),
        Mistake(
            "reads_output",
            "the output is read as a running sum",
            "把 output 当成了累加和来读",
            "application()'s `output` is where the result goes, not a running sum: before the "
            "kernel writes it, it holds whatever the output tensor held. Sum in a float32 "
            "accumulator, `accumulator = ntl.zeros(output.shape, dtype=ntl.float32)`, and "
            "assign `output = accumulator` once, after the loop.",
            "application() 里的 `output` 是结果写回的地方，不是累加和：在 kernel 写它之前，"
            "它里面是输出张量原来的内容。请在 float32 累加器里求和，"
            "`accumulator = ntl.zeros(output.shape, dtype=ntl.float32)`，循环结束后只赋值一次，"
            "`output = accumulator`。",
            found_by=(SOURCE,),
            explains=("store", "step/store_form"),
        ),
        Mistake(
            "slice_store",
            "a store into a slice of the output",
            "写入了 output 的切片",
            "NineToothed turns a plain assignment to application()'s `output` into the store of "
            "the output tile: write `output = accumulator`. A slice (`output[:, :] = ...`) is "
            "numpy's way, which the kernel NineToothed generates cannot take.",
            "NineToothed 会把对 application() 的 `output` 的普通赋值变成输出块的写回：请写 "
            "`output = accumulator`。切片赋值（`output[:, :] = ...`）是 numpy 的写法，"
            "NineToothed 生成的 kernel 不支持。",
            found_by=(SOURCE,),
            explains=("store",),
        ),
        Mistake(
            "tile_strides",
            "strides= given to tile()",
            "tile() 传了 strides=",
            "tile() lays tiles side by side when it gets no strides: each tile starts where the "
            "last one ends. With strides, the tiles overlap (strides smaller than the tile) and "
            "their grid is no longer the block grid. Call tile() with the block sizes only.",
            "不传 strides 时，tile() 把块一个挨一个地排开：每个块从上一个块结束的地方开始。"
            "传了 strides，块会互相重叠（步长小于块大小时），网格也不再是块网格。调用 tile() "
            "时只传分块大小。",
            found_by=(SOURCE,),
            explains=("*.tile", "*.group"),
        ),
        Mistake(
            "floor_count",
            "a block count rounded down",
            "块数被向下取整",
            "A block count worked out by floor division, `N // BLOCK_SIZE_N`, leaves out the "
            "partial last block whenever the size is not a multiple of the block size. Take "
            "the counts from the tiled output instead: `output_arranged.shape[0]` and "
            "`output_arranged.shape[1]`.",
            "用向下取整的除法算块数（`N // BLOCK_SIZE_N`），在尺寸不是分块大小的整数倍时会漏掉"
            "最后那个不完整的块。块数请取自分块后的输出：`output_arranged.shape[0]` 和 "
            "`output_arranged.shape[1]`。",
            found_by=(SOURCE,),
            explains=("*.expand/floor_division",),
        ),
        Mistake(
            "k_steps",
            "ntl.dot does not get the k-th tiles",
            "ntl.dot 拿到的不是第 k 块",
            "lhs and rhs are sequences of K tiles: loop `for k in range(lhs.shape[0])` and "
            "multiply the k-th tile of each, `ntl.dot(lhs[k], rhs[k])`. A fixed index "
            "(lhs[0]), no loop, or the whole sequence (`ntl.dot(lhs, rhs)`) multiplies the "
            "wrong tiles.",
            "lhs 和 rhs 是 K 块的序列：循环 `for k in range(lhs.shape[0])`，每一步把两者的第 k "
            "块相乘：`ntl.dot(lhs[k], rhs[k])`。固定下标（lhs[0]）、没有循环，或者把整个序列传给 "
            "ntl.dot（`ntl.dot(lhs, rhs)`），乘的都是错误的块。",
            found_by=(SOURCE,),
            explains=("step", "loop/deleted_statement"),
        ),
        Mistake(
            "matmul_operator",
            "Python's @ between tiles",
            "块之间用了 Python 的 @",
            "application() becomes a Triton kernel, and Triton does not compile `@` between "
            "tiles: multiply with `ntl.dot(lhs[k], rhs[k])`.",
            "application() 会变成 Triton kernel，Triton 不支持块之间的 `@` 运算：请用 "
            "`ntl.dot(lhs[k], rhs[k])` 相乘。",
            found_by=(SOURCE,),
            explains=("step",),
        ),
        Mistake(
            "torch_in_kernel",
            "torch used inside application()",
            "application() 里用了 torch",
            "application() becomes a Triton kernel that runs on the GPU, where torch does not "
            "exist (and the batch grader flags a file that uses it there). Use ntl: ntl.zeros "
            "for the accumulator, ntl.dot for the products.",
            "application() 会变成在 GPU 上运行的 Triton kernel，那里没有 torch（批量评分器也会"
            "标记在其中使用 torch 的文件）。请用 ntl：累加器用 ntl.zeros，乘积用 ntl.dot。",
            found_by=(SOURCE,),
        ),
        Mistake(
            "accumulator_shape",
            "the accumulator is not the output tile's shape",
            "累加器的形状不是输出块的形状",
            "The accumulator holds one output tile: create it as "
            "`ntl.zeros(output.shape, dtype=ntl.float32)`. lhs.shape and rhs.shape are the "
            "lengths of the K sequences, and a shape with BLOCK_SIZE_K is a tile of lhs or "
            "rhs, not of the output.",
            "累加器保存的是一个输出块：应写 `ntl.zeros(output.shape, dtype=ntl.float32)`。"
            "lhs.shape 和 rhs.shape 是 K 序列的长度；含 BLOCK_SIZE_K 的形状是 lhs 或 rhs 的块，"
            "不是输出块。",
            found_by=(SOURCE,),
            explains=("accumulator",),
        ),
        Mistake(
            "global_in_application",
            "application() uses a name from outside it",
            "application() 用了它外面的名字",
            "application() becomes a Triton kernel, and NineToothed carries into it only "
            "application()'s parameters (the tiles) and its own variables: a global of your "
            "file (BLOCK_SIZE_M, a constant defined at the top) does not exist there, so the "
            "kernel cannot be built. Take sizes from the tiles (`output.shape`, "
            "`lhs.shape[0]`), and write any other constant inside application().",
            "application() 会变成 Triton kernel，NineToothed 只把 application() 的参数（各个块）"
            "和它自己的变量带进去：文件里的全局名字（BLOCK_SIZE_M、在文件开头定义的常量）在那里"
            "并不存在，所以 kernel 无法构建。尺寸请从块上取（`output.shape`、`lhs.shape[0]`），"
            "其他常量直接写在 application() 里。",
            found_by=(SOURCE,),
            explains=("accumulator", "loop", "step", "store"),
        ),
        Mistake(
            "debug_print",
            "application() prints",
            "application() 里有 print",
            "A print in application() runs in every program at every step of its loop. The "
            "interpreter's small cases survive it, but on a GPU a 4096 x 4096 case prints "
            "millions of lines and runs past the time limit, and the speed it shows is the "
            "printing's. Remove the print before you hand the file in.",
            "application() 里的 print 会在每个程序、循环的每一步都执行。解释器上的小用例还能跑完，"
            "但在 GPU 上，一个 4096 x 4096 的用例会打印上百万行，超过时间限制，测到的速度也只是"
            "打印的速度。提交前请删掉这个 print。",
            found_by=(SOURCE,),
        ),
        Mistake(
            "build_error",
            "the kernel does not build or launch",
            "kernel 无法构建或启动",
            "NineToothed or Triton could not build or launch the kernel; their own error is "
            "kept below as detail, its last lines pointing at the failing line. Where no other "
            "hint names the cause, look for ntl.dot given tiles that are not 2-D or whose inner "
            "sizes differ, or Python that Triton does not compile inside application().",
            "NineToothed 或 Triton 无法构建或启动 kernel；它们自己的报错作为细节附在下面，最后几行"
            "指向出错的位置。如果没有别的提示指出原因，请检查传给 ntl.dot 的块是否都是二维的、内侧"
            "维度是否一致，以及 application() 里是否用了 Triton 不支持的 Python 写法。",
            found_by=(OUTPUT,),
            evidence_on_last_line=True,
            explains=("accumulator", "loop", "step", "store"),
        ),
    ]
}


def hint(key):
    """One hint as a dict ready for reports: key, title, title_zh, en, zh."""
    mistake = MISTAKES[key]
    return {
        "key": mistake.key,
        "title": mistake.title,
        "title_zh": mistake.title_zh,
        "en": mistake.en,
        "zh": mistake.zh,
    }


def found_by(source):
    """The keys a source of evidence can name, in declaration order (the hints' order)."""
    return tuple(key for key, mistake in MISTAKES.items() if source in mistake.found_by)
