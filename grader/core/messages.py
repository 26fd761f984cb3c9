"""The sentences the kit writes into case messages, findings, evidence and status lines, in
English and Chinese.

Records, the gradebook and the pytest grader keep the English (``say``), so a message
reads the same however it is shown; a student's page adds the Chinese of each line one of
these templates wrote (``chinese``), read back from the English. One table, so the two
languages cannot drift apart. Raw text (an exception's own words) matches no template and
is left to the English. Chinese templates take no format specs: they get the English's
text of each field. A field named ``evidence`` holds a line a template wrote (a clause added
to a finding): a template reads a line only where its evidence is the kit's too.
The findings' templates are kept in grader.core.finding_messages, those of a submission
not graded in full (a file that does not load, a run that ended early) in
grader.core.run_messages.
"""

import re
import string

from grader.core.finding_messages import FINDINGS
from grader.core.run_messages import RUNS

CASES = {
    # grader.core.checks: what the output is
    "not_tensor": ("nt_gemm returned {kind}, not a tensor", "nt_gemm 返回的是 {kind}，不是张量"),
    "wrong_shape": ("shape {got}, expected {expected}", "输出形状为 {got}，应为 {expected}"),
    "wrong_dtype": (
        "dtype {dtype}, expected torch.float16",
        "输出类型为 {dtype}，应为 torch.float16",
    ),
    "mismatches": (
        "{bad} of {total} elements outside |out - ref| <= {atol} + {rtol}*|ref|",
        "{total} 个元素中有 {bad} 个超出 |out - ref| <= {atol} + {rtol}*|ref|",
    ),
    "worst": (
        "worst at {index}: max abs error {absolute:.4g}, max rel error {relative:.4g}",
        "误差最大处在 {index}：最大绝对误差 {absolute}，最大相对误差 {relative}",
    ),
    "sample": (
        "  out{index} = {got:.5g}, expected {expected:.5g}",
        "  out{index} = {got}，应为 {expected}",
    ),
    "nondeterministic": (
        "two runs on the same inputs differ in {differing} elements",
        "相同输入的两次运行有 {differing} 个元素不同",
    ),
    "unwritten": (
        "{unwritten} of {total} output elements were never written (they still hold "
        "the NaN the output was filled with)",
        "{total} 个输出元素中有 {unwritten} 个从未被写入（仍是输出预先填充的 NaN）",
    ),
    # grader.core.checks: which mistake the wrong output is
    "last_tile_only": (
        "the output equals the product over K columns {last}:{k} alone (the last "
        "K tile, of K={k}): earlier tiles were discarded",
        "输出恰好等于只在 K 的第 {last}:{k} 列上的乘积（K={k} 的最后一个 K "
        "tile）：前面各 tile 的结果被丢掉了",
    ),
    "k_prefix": (
        "the output equals the product over K columns 0:{stop} of K={k}: the columns "
        "from {stop} on were never added (a partial last K tile dropped, or a K loop "
        "that stops early)",
        "输出恰好等于 K={k} 中第 0:{stop} 列上的乘积：从第 {stop} 列起的部分从未加上"
        "（丢掉了最后一个不完整的 K 尾块，或者 K 循环提前结束）",
    ),
    "float16_sum": (
        "the output equals a float16 running sum of the products of {block_k}-wide "
        "K tiles: the accumulator lost the small terms a float32 sum keeps",
        "输出恰好等于把 {block_k} 宽的 K tile 乘积逐个加进 float16 累加和的结果："
        "累加器丢掉了 float32 求和会保留的小项",
    ),
    "swapped_dot": (
        "the output equals, tile by tile ({size} x {size} tiles), the sum over k of "
        "rhs tile (k, j) @ lhs tile (i, k): ntl.dot's operands are swapped",
        "输出逐 tile（{size} x {size} 的 tile）恰好等于对 k 求和 rhs tile (k, j) @ "
        "lhs tile (i, k)：ntl.dot 的两个操作数顺序反了",
    ),
    "transposed_tiles": (
        "at {rows} x {columns} tiles, every output tile holds its own product transposed",
        "按 {rows} x {columns} 的 tile 看，每个输出 tile 存的都是它自己乘积的转置",
    ),
    "moved_tiles": (
        "at {rows} x {columns} tiles, {moved} of {total} output tiles hold another "
        "tile's product: tile {tile} holds the product meant for tile {source}",
        "按 {rows} x {columns} 的 tile 看，{total} 个输出 tile 中有 {moved} 个存的是"
        "别的 tile 的乘积：tile {tile} 存的是本该属于 tile {source} 的乘积",
    ),
    # grader.core.checks: a kernel that raised or does not build
    "not_launched": ("the kernel was not launched: {why}", "kernel 没有启动：{why}"),
    "not_retiled": (
        "the kernel was not built at other block sizes: {why}",
        "kernel 没有按其他分块大小构建：{why}",
    ),
    "wrapper_raised": (
        "your nt_gemm() raised {raised}, at line {line} in {function}(), before any kernel ran",
        "你的 nt_gemm() 在任何 kernel 运行之前就抛出了 {raised}（第 {line} 行，{function}() 中）",
    ),
    "not_run": ("not run: {error}", "未运行：{error}"),
    "flags_such_a_file": (
        "the batch grader flags such a file (score 0)",
        "批量评测会标记这样的文件（得 0 分）",
    ),
    "unbuildable_line": (
        "NineToothed made no kernel Python can read from your line {line}: {code}",
        "NineToothed 无法从你的第 {line} 行生成 Python 能读懂的 kernel：{code}",
    ),
    "cannot_build": (
        "the kernel cannot be built (the hint says why); the batch grader fails "
        "such a file (score 0)",
        "kernel 无法构建（提示里说明了原因）；批量评测会判这样的文件不通过（得 0 分）",
    ),
    "unbound_names": (
        "the kernel cannot be built: it uses {names}, which it does not have (the hint says where)",
        "kernel 无法构建：它用到了 {names}，而 kernel 里没有这些名字（提示里说明了位置）",
    ),
    "raised": ("the kernel raised {raised}", "kernel 抛出了异常 {raised}"),
    "did_not_build": (
        "the kernel did not build or run: NineToothed or Triton stopped with the "
        "error below (their own words; the hint says what to change)",
        "kernel 没能编译或运行：NineToothed 或 Triton 报出了下面的错误"
        "（它们的原话；提示里说明了该改什么）",
    ),
    "defined_in_loop": (
        "`{name}` is first assigned inside the loop but used after it: create it "
        "before the loop and add to it inside",
        "`{name}` 在循环内第一次赋值，却在循环后使用：应在循环前创建它，在循环内累加",
    ),
    "float16_start": (
        "`{name}` starts as float16 and the loop makes it float32: create it as float32",
        "`{name}` 初始为 float16，循环却把它变成了 float32：应把它创建为 float32",
    ),
    "not_for_gpu": (
        "does not build for {target} (the course's GPU), so no case runs: the "
        "interpreter would accept it, the GPU would not",
        "无法为 {target}（课程使用的 GPU）编译，因此没有运行任何用例：解释器能接受，GPU 不能",
    ),
    "compiler_words": ("the compiler's own words: {words}", "编译器的原话：{words}"),
    # grader.batch: a submission's message, and a case's as a student may see it
    # (the longer first: the first template that matches a line gives its Chinese)
    "public_cases_failed": (
        "{failing} of {total} public cases failed",
        "{total} 个公开用例中有 {failing} 个未通过",
    ),
    "cases_failed": ("{failing} of {total} cases failed", "{total} 个用例中有 {failing} 个未通过"),
    "refused_mistake": (
        "your kernel cannot run as written: {line}; nothing of it was run and the score is 0",
        "你的 kernel 按现在的写法无法运行：{line}；它没有被运行，得 0 分",
    ),
    "flagged_see_flags": (
        "flagged by the anti-cheat check (score 0): see the flags in your feedback",
        "被反作弊检查标记（得 0 分）：见反馈中的标记",
    ),
    "flagged": ("flagged by the anti-cheat check (score 0)", "被反作弊检查标记（得 0 分）"),
    "hidden_error": (
        "failed: the kernel raised an error on this hidden case",
        "未通过：kernel 在这个隐藏用例上抛出了异常",
    ),
    "hidden_mismatch": (
        "failed: the output does not match the reference on this hidden case",
        "未通过：在这个隐藏用例上输出与参考结果不符",
    ),
    # grader.core.diagnosis: evidence lines
    "hidden_failed": (
        "{count} case{s} failed this way (hidden cases, not quoted)",
        "{count} 个用例以这种方式失败（隐藏用例，不引用其信息）",
    ),
    "failed_with": ("{count} case{s} failed with: {line}", "{count} 个用例失败，信息为：{line}"),
    "block_order": (
        "every case at your own block sizes passes; built at {tiles} tiles the "
        "kernel fails ({failed})",
        "用你自己的分块大小时所有用例都通过；按 {tiles} 的 tile 构建时 kernel 失败（{failed}）",
    ),
    "one_k_tile": (
        "every case whose K fits in one K tile passes ({single}), every case needing "
        "several fails ({multi}), reading the tile as {block_k} wide",
        "K 放得进一个 K tile 的用例都通过（{single}），需要多个 K tile 的用例都失败"
        "（{multi}），按 {block_k} 宽的 tile 推断",
    ),
    "ragged_k": (
        "only cases whose K is not a multiple of {block_k} fail ({ragged}); those with "
        "whole K tiles pass ({even})",
        "只有 K 不是 {block_k} 的倍数的用例失败（{ragged}）；K 由完整 tile 组成的用例"
        "都通过（{even}）",
    ),
    "squares_pass": (
        "square shapes pass ({squares}) while shapes with more M blocks than N "
        "blocks or the reverse fail ({failed})",
        "方形的用例通过（{squares}），而 M 方向块数多于 N 方向块数（或相反）的用例失败（{failed}）",
    ),
    "partial_tiles_fail": (
        "only shapes with a partial tile in M or N fail ({failed}); shapes "
        "made of whole tiles pass ({whole})",
        "只有 M 或 N 方向含尾块的用例失败（{failed}）；由完整 tile 组成的用例都通过（{whole}）",
    ),
    "same_target": (
        "every failing case targets this mistake ({failed})",
        "每个失败的用例都是针对这个错误设计的（{failed}）",
    ),
}
TEMPLATES = {**CASES, **FINDINGS, **RUNS}
NESTED = "evidence"
# Fields of one known form, read as that form: a field before them may hold " (" too, and
# a line of raw text that happens to fit a short template ("no ... in ...") is not read.
FORMS = {"where": r"M=\d+, N=\d+, K=\d+", "file": r"\S+\.py"}


def say(key, **fields):
    """The English of template ``key`` with ``fields``: what records keep."""
    return TEMPLATES[key][0].format(**fields)


def _pattern(template):
    """A regex matching whatever ``template`` writes, each field a named group."""
    parts, seen = [], set()
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(
                f"(?P={field})" if field in seen else f"(?P<{field}>{FORMS.get(field, '.*?')})"
            )
            seen.add(field)
    return re.compile("".join(parts))


_READERS = [(_pattern(en), zh) for en, zh in TEMPLATES.values()]


def line_zh(line):
    """The Chinese of one line a template wrote, its fields too where a template wrote
    them (an evidence line quoting a case's message), else ''."""
    for pattern, zh in _READERS:
        match = pattern.fullmatch(line)
        if not match:
            continue
        said = {name: line_zh(value) if value else "" for name, value in match.groupdict().items()}
        if NESTED in said and not said[NESTED]:
            continue  # a clause after a line that is not the kit's
        return zh.format(**{name: said[name] or value for name, value in match.groupdict().items()})
    return ""


def chinese(text):
    """The Chinese of each line of ``text`` that a template wrote, one per line; the other
    lines (raw error text) are left out. '' when no line is the kit's."""
    return "\n".join(filter(None, (line_zh(line) for line in str(text).splitlines())))
