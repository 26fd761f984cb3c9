"""benchmarks.why_speed's findings in words, English and Chinese, for feedback.md, the
benchmark's summary and the staff's ``explain_speed`` command.

Every number comes from the ``why`` dict (one timed size); nothing here computes a verdict.
A ``why`` kept in a record before it named its card (``card``, ``feed_recorded_on``,
``practical_from_run``) was worked out from the H200's readings, and is said so.
"""

CERTAINTY_ZH = {"sure": "确定", "likely": "很可能", "possibly": "有可能", "not sure": "不确定"}
# Why the rule is as sure as it says: share-based for the roofs, fixed for the others.
HOW_SURE = {
    "likely": ("the measured rate is {share:.0%} of this limit", "实测速度为该上限的 {share:.0%}"),
    "possibly": (
        "the measured rate is only {share:.0%} of this limit, so something else costs too",
        "实测速度只有该上限的 {share:.0%}，还有别的开销",
    ),
}
HOW_SURE_BY_LIMIT = {
    "impossible": ("the number itself shows it", "数字本身就说明了这一点"),
    "short_run": (
        "a run this short is about fixed costs, whatever the tiles",
        "这么短的运行时间主要反映固定开销，与分块无关",
    ),
    "spills": (
        "the cubin shows the spills; how much they cost is not measured",
        "cubin 显示了溢出；其代价没有单独测量",
    ),
    "ragged": (
        "the kit's recorded runs show the same drop for every tile config, docs/perf-notes.md",
        "套件记录的运行中每种分块配置都出现了同样的下降，见 docs/perf-notes.md",
    ),
    "unexplained": ("no rule fits these numbers", "没有一条规则与这些数字相符"),
}
LIMITERS_ZH = {
    "blocks": "每个 SM 的块数上限",
    "warps": "warp 数上限",
    "registers": "寄存器",
    "shared_mem": "共享内存",
}
ROOF_NAMES = {
    "memory": ("the HBM bandwidth for the estimated traffic", "按估计流量计算的 HBM 带宽"),
    "tile_feed": ("feeding tiles into the SMs", "向 SM 输送分块数据的速度"),
    "tensor_cores": ("the tensor cores' practical peak", "张量核心的实际峰值"),
}
# The limit in a few words, for the report card's highlights.
LIMIT_SHORT = {
    "impossible": "measurement not trusted",
    "short_run": "per-call costs",
    "spills": "register spills",
    "ragged": "ragged N or K",
    "waves": "the last wave",
    "memory": "HBM bandwidth",
    "tile_feed": "tile feed",
    "tensor_cores": "tensor cores",
    "unexplained": "not explained",
}


def short(why):
    """'limit: tile feed (likely)'."""
    return f"limit: {LIMIT_SHORT[why['limit']]} ({why['certainty']})"


def _gb(count):
    """Traffic in decimal units, to go with rates in TB/s."""
    return f"{count / 1e9:.2f} GB" if count >= 1e9 else f"{count / 1e6:.0f} MB"


def _mib(count):
    """Cache sizes and what must fit in them, in binary units as the hardware counts them."""
    return f"{count / 2**20:.0f} MiB"


def _card(why):
    """The card the row ran on: "H100 SXM", "H200"."""
    return why.get("card") or why["machine"].split(" (")[0]


def _roof(why):
    return ROOF_NAMES.get(why["binding"], ("", ""))


def sentence(why):
    """(English, Chinese): the limit, consistent with the measured rate, and how sure."""
    w = why
    en_roof, zh_roof = _roof(w)
    limit = w["limit"]
    if limit == "impossible":
        en = (
            f"The measured {w['tflops']:.0f} TFLOPS is {w['roofline_fraction']:.0%} of the "
            "roofline bound, which no correct kernel can reach: the measurement is not trusted."
        )
        zh = (
            f"实测 {w['tflops']:.0f} TFLOPS 是屋顶线上限的 {w['roofline_fraction']:.0%}，"
            "正确的 kernel 不可能达到：该测量结果不可信。"
        )
    elif limit == "short_run":
        en = (
            f"The run is short ({w['median_us']:.0f} µs), so per-call costs (the launch, the "
            "pipeline filling up, the Python around the call) weigh on it more than any roof."
        )
        zh = (
            f"运行时间很短（{w['median_us']:.0f} µs），每次调用的固定开销（启动、流水线填充、"
            "调用前后的 Python）比任何上限都更重要。"
        )
    elif limit == "spills":
        en = (
            f"Registers spill: {w['spilled_bytes']} bytes per thread go to local memory, and the "
            f"kernel reaches {w['share']:.0%} of what its tiles allow ({w['predicted_tflops']:.0f}"
            " TFLOPS)."
        )
        zh = (
            f"寄存器溢出：每线程 {w['spilled_bytes']} 字节放到了本地内存，kernel 只达到分块所允许"
            f"速度（{w['predicted_tflops']:.0f} TFLOPS）的 {w['share']:.0%}。"
        )
    elif limit == "ragged":
        en = (
            f"The ragged cliff: N or K ({w['n']}, {w['k']}) is not a multiple of 16, so the loads "
            f"along it are masked element by element; your {w['tflops']:.0f} TFLOPS are "
            f"{w['share']:.0%} of the {w['predicted_tflops']:.0f} your tiles allow on aligned "
            f"sizes (torch.mm here: {w['torch_tflops']:.0f} TFLOPS)."
        )
        zh = (
            f"非对齐悬崖：N 或 K（{w['n']}，{w['k']}）不是 16 的倍数，沿它的加载逐元素掩码；"
            f"你的 {w['tflops']:.0f} TFLOPS 只是对齐规模下分块所允许的 "
            f"{w['predicted_tflops']:.0f} 的 {w['share']:.0%}（此规模下 torch.mm："
            f"{w['torch_tflops']:.0f} TFLOPS）。"
        )
    elif limit == "waves":
        en = (
            f"The waves: {w['tile_count']} tiles make {w['waves']} waves of {w['per_wave']}, the "
            f"last {w['last_wave']:.0%} full, so the SMs are busy {w['busy']:.0%} of the time; "
            f"with {en_roof} ({w['roofs'][w['binding']]:.0f} TFLOPS) that predicts "
            f"{w['predicted_tflops']:.0f}, and you measured {w['tflops']:.0f}."
        )
        zh = (
            f"波次：{w['tile_count']} 个分块分成 {w['waves']} 波（每波 {w['per_wave']} 个），"
            f"最后一波只满 {w['last_wave']:.0%}，SM 的忙碌比例为 {w['busy']:.0%}；结合{zh_roof}"
            f"（{w['roofs'][w['binding']]:.0f} TFLOPS），预测 {w['predicted_tflops']:.0f}，"
            f"实测 {w['tflops']:.0f}。"
        )
    elif limit == "unexplained" and w["binding"] is None:
        en = (
            f"None of the kit's formulas explains {w['tflops']:.0f} TFLOPS: it is above every "
            f"roof they give (the highest, {w['predicted_tflops']:.0f}), so the kernel does "
            "something its tile columns do not show."
        )
        zh = (
            f"套件的公式都解释不了 {w['tflops']:.0f} TFLOPS：它高于公式给出的所有上限（最高为 "
            f"{w['predicted_tflops']:.0f}），说明 kernel 做了分块列没有体现的事。"
        )
    elif limit == "unexplained":
        en = (
            f"None of the kit's formulas explains {w['tflops']:.0f} TFLOPS: the lowest roof "
            f"that stands predicts {w['predicted_tflops']:.0f}, and {w['share']:.0%} of it is "
            "too far from it to name it the limit."
        )
        zh = (
            f"套件的公式都解释不了 {w['tflops']:.0f} TFLOPS：成立的最低上限预测为 "
            f"{w['predicted_tflops']:.0f}，实测只有其 {w['share']:.0%}，相差太远，不能说它就是限制。"
        )
    else:  # memory, tile_feed, tensor_cores: the binding roof
        after = " after your waves" if w["waves_hold"] else ""
        after_zh = "（计入波次）" if w["waves_hold"] else ""
        en = (
            f"The limit is {en_roof}: {w['predicted_tflops']:.0f} TFLOPS{after}, and you "
            f"measured {w['tflops']:.0f}."
        )
        zh = f"限制来自{zh_roof}：{w['predicted_tflops']:.0f} TFLOPS{after_zh}，实测 {w['tflops']:.0f}。"
        if limit == "tensor_cores":
            card, recorded_on = _card(w), w.get("feed_recorded_on", "H200")
            where, where_zh = (
                (f"in the same run on this {card}", f"同一次运行中在这块 {card} 上")
                if w.get("practical_from_run")
                else (
                    f"on the {recorded_on} in the kit's recorded runs",
                    f"在套件记录的 {recorded_on} 运行中",
                )
            )
            en += (
                f" That roof is the best torch.mm reached {where}, "
                f"{w['roofs']['tensor_cores']:.0f} TFLOPS: closing the rest means what "
                "cuBLAS does beyond tiling."
            )
            zh += (
                f"这个上限是 torch.mm {where_zh}达到的最好成绩 "
                f"{w['roofs']['tensor_cores']:.0f} TFLOPS：剩下的差距要靠 cuBLAS 在分块之外的手段。"
            )
        if limit == "tile_feed":
            en += (
                f" A {w['tiles'].rsplit('x', 1)[0]} tile does {w['tile_intensity']:.1f} FLOP per "
                "byte it loads; larger tiles (128x128: 64, 128x256: 85) raise this roof."
            )
            zh += (
                f"{w['tiles'].rsplit('x', 1)[0]} 的分块每加载 1 字节做 {w['tile_intensity']:.1f}"
                " 次浮点运算；更大的分块（128x128：64，128x256：85）能抬高这个上限。"
            )
    en_how, zh_how = HOW_SURE_BY_LIMIT.get(limit) or HOW_SURE[why["certainty"]]
    if limit == "memory" and why["certainty"] == "possibly":
        en_how, zh_how = (
            "the traffic is an upper estimate: if L2 keeps more than one wave's "
            "panels, HBM moves less",
            "流量是上限估计：若 L2 保留的不止一波的数据，HBM 搬运的会更少",
        )
    en += f" How sure: {why['certainty']} ({en_how.format(share=why['share'])})."
    zh += f"把握：{CERTAINTY_ZH[why['certainty']]}（{zh_how.format(share=why['share'])}）。"
    return en, zh


def facts(why):
    """[(English, Chinese), ...]: the formulas applied to this build, one line each."""
    w = why
    tile = w["tiles"].rsplit("x", 1)[0]
    recorded_on = w.get("feed_recorded_on", "H200")
    lines = [
        (
            f"Tile: {w['tiles']}, {w['num_warps']} warps, {w['num_stages']} stages: one {tile} tile "
            f"does {w['tile_intensity']:.1f} FLOP per byte loaded, which at the "
            f"{w['tile_feed_tbs']} TB/s tile feed recorded on the {recorded_on} allows "
            f"{w['roofs']['tile_feed']:.0f} TFLOPS.",
            f"分块：{w['tiles']}，{w['num_warps']} 个 warp，{w['num_stages']} 级流水：一个 {tile} 分块每加载"
            f" 1 字节做 {w['tile_intensity']:.1f} 次浮点运算，按 {recorded_on} 上记录的 "
            f"{w['tile_feed_tbs']} TB/s 输送速度，最多 {w['roofs']['tile_feed']:.0f} TFLOPS。",
        )
    ]
    hbm_note = (
        " (the measured speed needs less than that, so L2 keeps more than one wave's panels)"
        if "memory" in w["refuted"]
        else ""
    )
    hbm_note_zh = (
        "（实测速度所需更少，说明 L2 保留了不止一波的数据）" if "memory" in w["refuted"] else ""
    )
    lines.append(
        (
            f"Traffic: A is read {w['a_reads']} times and B {w['b_reads']} times, "
            f"{_gb(w['l2_request_bytes'])} asked of L2 ({w['l2_rate_tbs']:.1f} TB/s at your speed); "
            f"HBM moves at least {_gb(w['min_bytes'])}, about {_gb(w['hbm_bytes'])} if L2 "
            f"({_mib(w['l2_bytes'])}) keeps one wave's {_mib(w['wave_footprint_bytes'])} of panels: "
            f"{w['hbm_rate_tbs']:.2f} of {w['bandwidth_tbs']} TB/s, a bandwidth roof of "
            f"{w['roofs']['memory']:.0f} TFLOPS{hbm_note}.",
            f"流量：A 被读 {w['a_reads']} 次，B 被读 {w['b_reads']} 次，向 L2 请求 "
            f"{_gb(w['l2_request_bytes'])}（按你的速度为 {w['l2_rate_tbs']:.1f} TB/s）；HBM 至少搬运 "
            f"{_gb(w['min_bytes'])}，若 L2（{_mib(w['l2_bytes'])}）保留一波的 "
            f"{_mib(w['wave_footprint_bytes'])} 数据，约为 {_gb(w['hbm_bytes'])}："
            f"{w['hbm_rate_tbs']:.2f} / {w['bandwidth_tbs']} TB/s，带宽上限 {w['roofs']['memory']:.0f}"
            f" TFLOPS{hbm_note_zh}。",
        )
    )
    if w["occupancy_source"] == "cubin":
        source = (
            f"from the cubin: {w['registers']} registers, {w['shared_bytes'] / 1024:.0f} KiB "
            "shared memory",
            f"来自 cubin：{w['registers']} 个寄存器，共享内存 {w['shared_bytes'] / 1024:.0f} KiB",
        )
    else:
        source = (
            f"estimated from the stages' {w['shared_bytes'] / 1024:.0f} KiB of shared memory; "
            "registers unknown",
            f"按各级流水的 {w['shared_bytes'] / 1024:.0f} KiB 共享内存估计；寄存器未知",
        )
    lines.append(
        (
            f"Occupancy: {w['blocks_per_sm']} block(s) per SM, {w['active_warps']} of "
            f"{w['max_warps']} warps, limited by {w['limiter'].replace('_', ' ')} ({source[0]}).",
            f"占用率：每个 SM {w['blocks_per_sm']} 个块，{w['active_warps']}/{w['max_warps']} 个 warp，"
            f"受{LIMITERS_ZH.get(w['limiter'], w['limiter'])}限制（{source[1]}）。",
        )
    )
    waves_note = (
        ""
        if w["waves_hold"]
        else "; the measured rate beats this, so the kernel fills the SMs better than its "
        "tile columns show"
    )
    waves_note_zh = (
        "" if w["waves_hold"] else "；实测速度超过此预测，kernel 实际填满 SM 的程度高于分块列所示"
    )
    lines.append(
        (
            f"Waves: {w['tile_count']} tiles over {w['n_sm']} SMs x {w['blocks_per_sm']} = "
            f"{w['per_wave']} per wave: {w['waves']} wave(s), the last {w['last_wave']:.0%} full, "
            f"the SMs busy {w['busy']:.0%}{waves_note}.",
            f"波次：{w['tile_count']} 个分块，每波 {w['n_sm']} 个 SM x {w['blocks_per_sm']} = "
            f"{w['per_wave']} 个：共 {w['waves']} 波，最后一波满 {w['last_wave']:.0%}，SM 忙碌 "
            f"{w['busy']:.0%}{waves_note_zh}。",
        )
    )
    lines.append(
        (
            f"Roofline: {w['tflops']:.0f} TFLOPS is {w['roofline_fraction']:.0%} of the "
            f"{w['roofline_tflops']:.0f} TFLOPS bound for this shape on the {w['machine']} "
            f"({w['bound']}); torch.mm reached {w['torch_tflops']:.0f} in the same run.",
            f"屋顶线：{w['tflops']:.0f} TFLOPS 是 {w['machine']} 上此形状上限 "
            f"{w['roofline_tflops']:.0f} TFLOPS 的 {w['roofline_fraction']:.0%}（"
            f"{'计算受限' if w['bound'] == 'compute-bound' else '访存受限'}）；同一次运行中 torch.mm 为 "
            f"{w['torch_tflops']:.0f}。",
        )
    )
    return lines


def markdown(whys):
    """The "Why this speed" section: per timed size, the sentence, then the facts."""
    if not whys:
        return []
    lines = [
        "",
        "## Why this speed / 为什么是这个速度",
        "",
        "The lessons' formulas (ledger/formulas.py) applied to your kernel's tiles, launch and "
        "build; the rules were checked against recorded H200 and H100 measurements, not "
        "re-measured. / 课程中的公式（ledger/formulas.py）应用于你的 kernel 的分块、启动参数与"
        "编译结果；这些规则用已记录的 H200 和 H100 测量结果核对过，并未重新测量。",
    ]
    for why in whys:
        en, zh = sentence(why)
        lines += ["", f"### {why['size']}", "", f"- {en}", f"- {zh}", ""]
        for fact_en, fact_zh in facts(why):
            lines += [f"- {fact_en}", f"  {fact_zh}"]
    return lines
