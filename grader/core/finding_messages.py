"""The findings' sentences (grader.core.layout, grader.core.size_slips,
grader.core.source_mistakes), in English and Chinese: part of grader.core.messages's table.

A template whose ``{evidence}`` is another finding (a clause added to it) comes before the
templates it adds to: a line is read by the first template that matches all of it.
"""

_OUTSIDE = (
    "the kernel NineToothed generates has only its parameters and its own variables, "
    "so it cannot be built: take sizes from the tiles (`output.shape`, `lhs.shape[0]`) "
    "and write any other constant in application() itself",
    "NineToothed 生成的 kernel 里只有它的参数和它自己的变量，所以无法构建：尺寸请从 tile "
    "取（`output.shape`、`lhs.shape[0]`），其他常量直接写在 application() 里",
)

FINDINGS = {
    # clauses added to a finding (grader.core.layout)
    "count_rounded_down": (
        "{evidence} (the block count is rounded down)",
        "{evidence}（块数被向下取整了）",
    ),
    "always_the_same": (
        "{evidence}; dimension {dimension} is always {value}",
        "{evidence}；第 {dimension} 维始终是 {value}",
    ),
    "right_at": ("{evidence}; it is right at {sizes}", "{evidence}；在 {sizes} 时是对的"),
    "k_tile_dropped": (
        "{evidence}: the partial K tile ({width} wide) is dropped",
        "{evidence}：不完整的 K 尾块（宽 {width}）被丢掉了",
    ),
    "never_changes": ("{evidence}; it never changes with K", "{evidence}；它从不随 K 变化"),
    # grader.core.layout: the arranged levels
    "arrangement_unfinished": (
        "arrangement() still raises NotImplementedError",
        "arrangement() 仍在抛出 NotImplementedError",
    ),
    "symbolic_failure": (
        "arrangement() fails on symbolic tensors, before any kernel is built: {error}",
        "arrangement() 在符号张量上就失败了，还没有构建任何 kernel：{error}",
    ),
    "not_compared": (
        "the arranged shapes could not be compared ({error}); levels seen: {levels}",
        "无法比较排布后的形状（{error}）；看到的各层：{levels}",
    ),
    "outer_shapes_differ": (
        "at {where} the arranged tensors' outer shapes differ (lhs {lhs}, "
        "rhs {rhs}, output {output}): NineToothed starts one program per "
        "element of lhs's outer shape and pairs the tiles by each tensor's "
        "own, so all three must be the output's block grid",
        "在 {where} 时，排布后三个张量的外层形状不同（lhs {lhs}，rhs {rhs}，"
        "output {output}）：NineToothed 按 lhs 外层形状的每个元素启动一个程序，"
        "并按各张量自己的外层形状配对 tile，所以三者都必须是输出的块网格",
    ),
    "output_untiled": (
        "output is not tiled: its arrangement has the single level {level} "
        "({where}), where a grid of (BLOCK_SIZE_M, BLOCK_SIZE_N) tiles was "
        "expected",
        "output 没有分块：它的排布只有一层 {level}（{where}），而这里应是由 "
        "(BLOCK_SIZE_M, BLOCK_SIZE_N) 的 tile 组成的网格",
    ),
    "k_untiled": (
        "{role}'s tiles are {tile} at {where}: each holds all of K, so there are no "
        "K tiles to loop over; tile K by BLOCK_SIZE_K and group the K tiles, "
        "`{tiling}`",
        "在 {where} 时 {role} 的 tile 是 {tile}：每个 tile 都包含了全部 K，没有可以"
        "循环的 K tile；应沿 K 按 BLOCK_SIZE_K 分块，再把 K tile 分组，`{tiling}`",
    ),
    "squeeze_axis": (
        "{role}'s K sequence has length 1 at every size, where ceil(K/{bk}) = "
        "{need} at {where}: the squeeze took out the K tiles; squeeze the length-1 "
        "dimension, `{role}_arranged.dtype.squeeze({right})`",
        "{role} 的 K 序列在每个规模下长度都是 1，而在 {where} 时 ceil(K/{bk}) = "
        "{need}：squeeze 去掉的是 K tile 所在的维；应去掉长度为 1 的那一维，"
        "`{role}_arranged.dtype.squeeze({right})`",
    ),
    "group_axis": (
        "{role}'s outer shape is {outer} where the output grid is {grid}, and its K "
        "sequence has length 1 where ceil(K/{bk}) = {need} ({where}): its tiles are "
        "grouped along the other axis; `{tiling}`",
        "{role} 的外层形状是 {outer}，而输出的块网格是 {grid}；它的 K 序列长度为 1，"
        "而 ceil(K/{bk}) = {need}（{where}）：它的 tile 是沿另一个轴分组的；"
        "`{tiling}`",
    ),
    "output_grid_floored": (
        "output outer shape is {outer} where the block grid ceil(M/{bm}) x "
        "ceil(N/{bn}) is {grid} (rounded down, so the partial edge tiles get "
        "no program) ({where})",
        "output 的外层形状是 {outer}，而块网格 ceil(M/{bm}) x ceil(N/{bn}) "
        "应为 {grid}（被向下取整了，边缘的尾块没有分到程序）（{where}）",
    ),
    "output_grid": (
        "output outer shape is {outer} where the block grid ceil(M/{bm}) x "
        "ceil(N/{bn}) is {grid} ({where})",
        "output 的外层形状是 {outer}，而块网格 ceil(M/{bm}) x ceil(N/{bn}) 应为 {grid}（{where}）",
    ),
    "missing_squeeze": (
        "{role} levels are {levels} ({where}): the K sequence {sequence} still "
        "has a length-1 dimension; squeeze it out of {role}'s dtype",
        "{role} 的各层是 {levels}（{where}）：K 序列 {sequence} 仍带着一个长度"
        "为 1 的维；应从 {role} 的 dtype 中 squeeze 掉它",
    ),
    "three_levels": (
        "{role} levels are {levels} ({where}), where three levels were expected: "
        "the output's block grid, a 1-D sequence of K tiles, and a {tile} tile",
        "{role} 的各层是 {levels}（{where}），而应有三层：输出的块网格、一维的 "
        "K tile 序列，以及 {tile} 的 tile",
    ),
    "outer_shape": (
        "{role} outer shape is {outer} where the output grid is {grid} ({where})",
        "{role} 的外层形状是 {outer}，而输出的块网格是 {grid}（{where}）",
    ),
    "k_length": (
        "{role} K sequence has length {got} where ceil(K/{bk}) = {need} ({where})",
        "{role} 的 K 序列长度为 {got}，而 ceil(K/{bk}) = {need}（{where}）",
    ),
    "tile_shape": (
        "{role} tiles are {tile} where {expected} was expected (output tiles are "
        "{output}, lhs tiles {lhs}; {where})",
        "{role} 的 tile 是 {tile}，而应为 {expected}（output 的 tile 是 {output}，"
        "lhs 的 tile 是 {lhs}；{where}）",
    ),
    # grader.core.size_slips: a matrix size where a block count or block size belongs
    "expand_by_size": (
        "line {line}, `{code}`: expand() gets {letter} itself ({value} at "
        "{where}) as entry {position} of its shape, not a block count: that entry "
        "wants the number of blocks along its axis "
        "(output_arranged.shape[{position}], {count} here)",
        "第 {line} 行，`{code}`：expand() 形状的第 {position} 项是 {letter} 本身"
        "（{where} 时为 {value}），不是块数：这一项应是该轴上的块数"
        "（output_arranged.shape[{position}]，此处为 {count}）",
    ),
    "expand_by_size_uncounted": (
        "line {line}, `{code}`: expand() gets {letter} itself ({value} "
        "at {where}) as entry {position} of its shape, not a block "
        "count: that entry wants the number of blocks along its axis "
        "(output_arranged.shape[{position}])",
        "第 {line} 行，`{code}`：expand() 形状的第 {position} 项是 "
        "{letter} 本身（{where} 时为 {value}），不是块数：这一项应是该轴"
        "上的块数（output_arranged.shape[{position}]）",
    ),
    "tile_by_size": (
        "line {line}, `{code}`: tile() gets {letter} itself ({value} at {where}) "
        "as entry {position} of its shape, not a block size: that entry wants "
        "BLOCK_SIZE_{letter} (or -1 to keep every tile along its axis)",
        "第 {line} 行，`{code}`：tile() 形状的第 {position} 项是 {letter} 本身"
        "（{where} 时为 {value}），不是分块大小：这一项应是 BLOCK_SIZE_{letter}"
        "（或用 -1 保留该轴上的全部 tile）",
    ),
    "group_size": (
        "line {line}, `{code}`: groups the tiles {shape} at a time, so a program "
        "does not get the whole row of lhs's K tiles (or column of rhs's): group "
        "lhs's tiles by `.tile((1, -1))` and rhs's by `.tile((-1, 1))`",
        "第 {line} 行，`{code}`：每次按 {shape} 把 tile 分组，于是一个程序拿不到 lhs 的"
        "一整行 K tile（或 rhs 的一整列）：lhs 的 tile 应按 `.tile((1, -1))` 分组，rhs 的"
        "按 `.tile((-1, 1))`",
    ),
    # grader.core.source_mistakes: one line of the file, "line N: " before what it says
    # grader.core.source_mistakes: names application() (or a helper it calls) reads from
    # outside itself, which the generated kernel does not have
    "outside_global": (
        "application() uses {names} from your file's globals; " + _OUTSIDE[0],
        "application() 用到了你文件里的全局名字 {names}；" + _OUTSIDE[1],
    ),
    "outside_undefined": (
        "application() uses {names}, which it does not define; " + _OUTSIDE[0],
        "application() 用到了它没有定义的名字 {names}；" + _OUTSIDE[1],
    ),
    "helper_outside_global": (
        "{helper}(), which application() calls, uses {names} from your "
        "file's globals; " + _OUTSIDE[0],
        "application() 调用的 {helper}() 用到了你文件里的全局名字 {names}；" + _OUTSIDE[1],
    ),
    "helper_default": (
        "{helper}() is called here without {names}, which it leaves to its "
        "default: NineToothed copies a helper into the kernel without its "
        "default values, so {names} does not exist there and the kernel cannot "
        "be built; pass {names} in the call",
        "这里调用 {helper}() 时没有传 {names}，而是用它的默认值：NineToothed 把辅助"
        "函数复制进 kernel 时不带默认值，所以那里没有 {names}，kernel 无法构建；"
        "请在调用时传入 {names}",
    ),
    "helper_outside_undefined": (
        "{helper}(), which application() calls, uses {names}, which "
        "it does not define; " + _OUTSIDE[0],
        "application() 调用的 {helper}() 用到了它没有定义的名字 {names}；" + _OUTSIDE[1],
    ),
    "at_line": ("line {line}: {evidence}", "第 {line} 行：{evidence}"),
    "returns_container": (
        "arrangement() returns a {kind}, {code}; NineToothed needs a tuple: "
        "`return lhs_arranged, rhs_arranged, output_arranged`",
        "arrangement() 返回的是 {kind}，{code}；NineToothed 需要的是元组："
        "`return lhs_arranged, rhs_arranged, output_arranged`",
    ),
    "returns_count": (
        "arrangement() returns {count} tensors, {code}; it must return three, one "
        "per parameter of application(): lhs's, rhs's and output's arranged tensor",
        "arrangement() 返回了 {count} 个张量，{code}；它必须返回三个，与 "
        "application() 的参数一一对应：lhs、rhs 和 output 排布后的张量",
    ),
    "returns_order": (
        "arrangement() returns the arranged {got} in that order; return them as "
        "its parameters come, {parameters}: NineToothed hands them to application() "
        "by position",
        "arrangement() 按 {got} 的顺序返回排布后的张量；应按参数的顺序返回，"
        "{parameters}：NineToothed 按位置把它们交给 application()",
    ),
    "matmul_operator": (
        "{code} uses Python's `@`, which Triton does not compile for tiles: "
        "write `ntl.dot(lhs[k], rhs[k])`",
        "{code} 用了 Python 的 `@`，Triton 不会为 tile 编译它：应写 `ntl.dot(lhs[k], rhs[k])`",
    ),
    "prints_in_kernel": (
        "{code} prints in every program at every step: on a GPU the large "
        "cases print millions of lines and run past the time limit; remove "
        "it before handing in",
        "{code} 会在每个程序的每一步打印：在 GPU 上，大用例会打印上百万行并"
        "超过时间限制；提交前请删掉它",
    ),
    "torch_in_kernel": (
        "application() calls {code}: application() becomes a Triton kernel, "
        "where torch does not exist; use ntl (ntl.dot, ntl.zeros)",
        "application() 调用了 {code}：application() 会变成 Triton kernel，其中"
        "没有 torch；应使用 ntl（ntl.dot、ntl.zeros）",
    ),
    "returns_result": (
        "application() returns its result; NineToothed ignores a return value: "
        "assign it instead, `{output} = {value}`",
        "application() 用 return 返回了结果；NineToothed 会忽略返回值：应改为赋值，"
        "`{output} = {value}`",
    ),
    "never_assigns": (
        "application() never assigns `{output}`: NineToothed writes the output "
        "tile only where application() assigns it, `{output} = accumulator`",
        "application() 从未给 `{output}` 赋值：只有在 application() 给它赋值时，"
        "NineToothed 才会写回输出 tile，`{output} = accumulator`",
    ),
    "zeros_without_dtype": (
        "{code} is given no dtype: create the accumulator as float32, "
        "`ntl.zeros(output.shape, dtype=ntl.float32)`",
        "{code} 没有指定 dtype：累加器应创建为 float32，"
        "`ntl.zeros(output.shape, dtype=ntl.float32)`",
    ),
    "zeros_of_dtype": (
        "the accumulator is created as {dtype}, not float32: "
        "`ntl.zeros(output.shape, dtype=ntl.float32)`",
        "累加器被创建为 {dtype}，不是 float32：`ntl.zeros(output.shape, dtype=ntl.float32)`",
    ),
    "accumulator_of_operand": (
        "the accumulator takes {shape}, the shape of the sequence of K "
        "tiles `{operand}` is; it must have the output tile's shape, "
        "`output.shape`",
        "累加器用的是 {shape}，即 K tile 序列 `{operand}` 的形状；它必须"
        "是输出 tile 的形状，`output.shape`",
    ),
    "accumulator_block_k": (
        "the accumulator's shape {shape} holds BLOCK_SIZE_K; the output "
        "tile is (BLOCK_SIZE_M, BLOCK_SIZE_N): take `output.shape`",
        "累加器的形状 {shape} 里有 BLOCK_SIZE_K；输出 tile 是 "
        "(BLOCK_SIZE_M, BLOCK_SIZE_N)：应取 `output.shape`",
    ),
    "dot_whole_sequence": (
        "{code} gets `{operand}` itself, the whole sequence of K tiles: give "
        "it one tile, `{operand}[k]`, in a loop over k",
        "{code} 拿到的是 `{operand}` 本身，即整个 K tile 序列：应在遍历 k 的"
        "循环里给它一个 tile，`{operand}[k]`",
    ),
    "dot_outside_loop": (
        "{code} is not inside a loop over the K tiles: only one K tile is "
        "multiplied; sum `ntl.dot(lhs[k], rhs[k])` over "
        "`for k in range(lhs.shape[0])`",
        "{code} 不在遍历 K tile 的循环里：只乘了一个 K tile；应在 "
        "`for k in range(lhs.shape[0])` 中累加 `ntl.dot(lhs[k], rhs[k])`",
    ),
    "dot_fixed_tile": (
        "{code} takes {tile} at every step of the loop: index both operands with "
        "the loop's k, `ntl.dot(lhs[k], rhs[k])`",
        "{code} 在循环的每一步取的都是 {tile}：两个操作数都应该用循环的 k 索引，"
        "`ntl.dot(lhs[k], rhs[k])`",
    ),
    # grader.core.source_slips: a slip on one line, "line N: " before what it says
    "elementwise_product": (
        "{code} multiplies the two tiles element by element, which is no "
        "matrix product (and builds only where their shapes agree): "
        "multiply them with `ntl.dot({left}, {right})`",
        "{code} 是把两个 tile 逐元素相乘，不是矩阵乘积（而且只有形状相同时才"
        "能构建）：应写 `ntl.dot({left}, {right})`",
    ),
    "transposed_tile": (
        "{code} transposes a tile of `{operand}`; the tiles already come as "
        "ntl.dot takes them, lhs's (BLOCK_SIZE_M, BLOCK_SIZE_K) and rhs's "
        "(BLOCK_SIZE_K, BLOCK_SIZE_N): pass the tile as it is",
        "{code} 把 `{operand}` 的 tile 转置了；tile 本来就是 ntl.dot 要的形状："
        "lhs 的是 (BLOCK_SIZE_M, BLOCK_SIZE_K)，rhs 的是 (BLOCK_SIZE_K, "
        "BLOCK_SIZE_N)：直接传入 tile 即可",
    ),
    "len_of_tiles": (
        "{code} asks for the length of the tile sequence with len(), which the "
        "kernel NineToothed generates cannot take: the number of K tiles is "
        "`{operand}.shape[0]`",
        "{code} 用 len() 取 tile 序列的长度，而 NineToothed 生成的 kernel 里不能这样"
        "取：K tile 的个数是 `{operand}.shape[0]`",
    ),
    "slice_store": (
        "{code} stores into a slice of `{output}`; NineToothed writes the output "
        "tile from a plain assignment only: `{output} = {value}`",
        "{code} 写入的是 `{output}` 的切片；NineToothed 只会把普通赋值变成写回："
        "`{output} = {value}`",
    ),
    "output_augmented": (
        "{code} adds into `{output}` as if it held a running sum; it holds "
        "whatever the output tensor held before the kernel: keep the sum in "
        "a float32 accumulator and assign `{output} = accumulator` once, "
        "after the loop",
        "{code} 把 `{output}` 当成累加和来加；但它里面是输出张量在 kernel 之前"
        "的内容：请在 float32 累加器里求和，循环结束后只赋值一次，"
        "`{output} = accumulator`",
    ),
    "output_read": (
        "application() reads `{output}` as a value; it holds whatever the output "
        "tensor held before the kernel: keep the sum in a float32 accumulator and "
        "assign `{output} = accumulator` once, after the loop",
        "application() 把 `{output}` 当作值来读；但它里面是输出张量在 kernel 之前的"
        "内容：请在 float32 累加器里求和，循环结束后只赋值一次，"
        "`{output} = accumulator`",
    ),
    "loop_starts_late": (
        "{code} starts at {start}, so the first K tiles are never added: loop "
        "over every K tile from the first, `for k in range(lhs.shape[0])`",
        "{code} 从 {start} 开始，前面的 K tile 从未被加上：应从第一个 K tile "
        "开始遍历全部，`for k in range(lhs.shape[0])`",
    ),
    "counter_unset": (
        "the loop's test reads `{counter}` before anything assigns it: start "
        "the count before the loop, `{counter} = 0`",
        "循环条件在 `{counter}` 被赋值之前就读了它：在循环之前开始计数，`{counter} = 0`",
    ),
    "accumulates_with": (
        "{code} combines each step's product with `{op}`: add it, "
        "`{accumulator} += ntl.dot(lhs[k], rhs[k])`",
        "{code} 用 `{op}` 合并每一步的乘积：应当相加，`{accumulator} += ntl.dot(lhs[k], rhs[k])`",
    ),
    "assigned_in_loop": (
        "{code} assigns `{accumulator}` at every step of the loop, so only the "
        "last K tile's product is kept: add to it, "
        "`{accumulator} += ntl.dot(lhs[k], rhs[k])`",
        "{code} 在循环的每一步都给 `{accumulator}` 重新赋值，只留下了最后一个 K tile "
        "的乘积：应累加，`{accumulator} += ntl.dot(lhs[k], rhs[k])`",
    ),
    "zeros_in_loop": (
        "{code} creates the accumulator inside the loop, so every step starts "
        "again from zero: create it once, before the loop",
        "{code} 在循环内部创建累加器，每一步都从零重新开始：应在循环之前只创建一次",
    ),
    "no_product": (
        "application() multiplies no tiles (no ntl.dot, here or in a helper it "
        "calls), so the output is the accumulator as created: add "
        "`ntl.dot(lhs[k], rhs[k])` to it in a loop over k",
        "application() 没有做任何 tile 乘法（它和它调用的辅助函数里都没有 ntl.dot），"
        "输出就是累加器创建时的样子：应在遍历 k 的循环里把 `ntl.dot(lhs[k], rhs[k])` "
        "加到累加器上",
    ),
    "dot_same_operand": (
        "{code} multiplies tiles of `{operand}` with each other: ntl.dot "
        "takes the k-th tile of each operand, `ntl.dot(lhs[k], rhs[k])`",
        "{code} 把 `{operand}` 的 tile 和它自己相乘：ntl.dot 应取两个操作数各自的"
        "第 k 个 tile，`ntl.dot(lhs[k], rhs[k])`",
    ),
    "dot_shifted_tile": (
        "{code} takes {tile}, not the k-th tile: index both operands with the "
        "loop's k itself, `ntl.dot(lhs[k], rhs[k])`",
        "{code} 取的是 {tile}，不是第 k 个 tile：两个操作数都应直接用循环的 k "
        "索引，`ntl.dot(lhs[k], rhs[k])`",
    ),
    "returns_nothing": (
        "arrangement() returns nothing: end it with "
        "`return lhs_arranged, rhs_arranged, output_arranged`",
        "arrangement() 没有返回任何东西：最后应写 "
        "`return lhs_arranged, rhs_arranged, output_arranged`",
    ),
    "loop_never_runs": (
        "{code} is false as `{counter}` starts, so the loop adds no K tile: "
        "loop while `{counter}` is below the count, `{counter} < lhs.shape[0]`",
        "{code} 在 `{counter}` 的初值下就不成立，循环一个 K tile 也没有加：应在 "
        "`{counter}` 小于块数时循环，`{counter} < lhs.shape[0]`",
    ),
    "loop_starts_early": (
        "{code} starts at {start}, before the first K tile, where there is "
        "none: loop over the K tiles there are, `for k in range(lhs.shape[0])`",
        "{code} 从 {start} 开始，在第一个 K tile 之前，那里并没有 tile：只遍历实际"
        "存在的 K tile，`for k in range(lhs.shape[0])`",
    ),
    "loop_ends_early": (
        "{code} stops before the last K tile, which is never added: loop over "
        "every K tile, `for k in range(lhs.shape[0])`",
        "{code} 在最后一个 K tile 之前就停了，它从未被加上：应遍历全部 K tile，"
        "`for k in range(lhs.shape[0])`",
    ),
    "loop_runs_past": (
        "{code} runs past the last K tile: loop over the K tiles there are, "
        "`for k in range(lhs.shape[0])`",
        "{code} 越过了最后一个 K tile：只遍历实际存在的 K tile，`for k in range(lhs.shape[0])`",
    ),
    "loop_steps_over": (
        "{code} steps by {step}, so it skips K tiles: step by one, `for k in range(lhs.shape[0])`",
        "{code} 每次前进 {step}，跳过了一些 K tile：应逐个遍历，`for k in range(lhs.shape[0])`",
    ),
    "cast_each_step": (
        "{code} rounds to {dtype} at every step of the loop, so the sum loses "
        "what a float32 sum keeps: add ntl.dot's float32 products as they are, "
        "and convert once, where the tile is written",
        "{code} 在循环的每一步都舍入到 {dtype}，求和因此丢掉了 float32 会保留的部分："
        "直接累加 ntl.dot 的 float32 结果，只在写回时转换一次",
    ),
    "tile_strides": (
        "{code} gives tile() strides={strides}: a tile then starts every "
        "{strides} elements, so the tiles overlap and their grid is not the "
        "block grid; leave strides out, so that each tile starts where the last "
        "one ends",
        "{code} 给 tile() 传了 strides={strides}：每隔 {strides} 个元素就开始一个 "
        "tile，tile 互相重叠，网格也不再是块网格；请去掉 strides，让每个 tile 从上"
        "一个结束的地方开始",
    ),
    "floor_mode": (
        "{code} sets floor_mode=True: the partial tiles at the edges are dropped, "
        "and the elements in them are never computed; leave floor_mode out",
        "{code} 设置了 floor_mode=True：边缘不完整的 tile 被丢掉，其中的元素从未被计算；"
        "请去掉 floor_mode",
    ),
    "floor_count": (
        "{code} counts blocks by floor division, which drops the partial last "
        "block when the size is not a multiple of the block size: take the count "
        "of the tiled output, `output_arranged.shape[{position}]`",
        "{code} 用向下取整的除法算块数，尺寸不是分块大小的整数倍时会丢掉最后那个"
        "不完整的块：请用分块后输出的块数，`output_arranged.shape[{position}]`",
    ),
    "k_loop_bound": (
        "the loop runs over {code}, but `{operand}` is the 1-D sequence of K tiles "
        "(indexed `{operand}[k]`): its length is `{operand}.shape[0]`",
        "循环遍历的是 {code}，但 `{operand}` 是一维的 K tile 序列（按 "
        "`{operand}[k]` 索引）：它的长度是 `{operand}.shape[0]`",
    ),
}
