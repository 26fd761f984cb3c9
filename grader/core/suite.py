"""Running catalogue cases under pytest, and the grade printed at the end.

Shared by the public tests (``pytest assignment``) and the full grader
(``pytest grader``), so both explain a failure the same way: the check's own
verdict, then the likely mistake behind it, in English and Chinese.
"""

import pathlib

import pytest

from grader.core import (
    cases,
    checks,
    diagnosis,
    execution,
    gpu_compile,
    layout,
    mistakes,
    source_mistakes,
)
from grader.core.checks import Verdict
from grader.core.mistakes import MISTAKES


def check_case(case, submission, backend, seed, request):
    """Run one case on the submission and fail the test with an explanation if it is wrong."""
    config = request.config
    if not case.runs_on(backend.name):
        config._ntgemm_gpu_only_skipped = getattr(config, "_ntgemm_gpu_only_skipped", 0) + 1
        pytest.skip(cases.interpreter_skip_reason(case))
    module = load(submission, config, case)
    verdict = case_verdict(case, module, built(config), lambda: _source(submission), backend, seed)
    record(config, case, verdict)
    if not verdict.passed:
        pytest.fail(failure_text(case, verdict, config), pytrace=False)
    return verdict


def case_verdict(case, module, build, source, backend, seed):
    """One case's Verdict for a loaded module, its GPU build (``gpu_build``) and its source
    (a function that reads it): what ``check_case`` passes or fails, with no pytest around it
    (grader/tests/diagnosis_table.py grades mutants with it)."""
    if backend.is_interpreter and build is not None and build.checked and not build.ok:
        # What the course's GPU would say decides, not what the interpreter accepts.
        return checks.build_verdict(case, build, source())
    try:
        outputs = execution.produce(case, module, seed, backend.device)
    except Exception as error:  # noqa: BLE001 - the student's kernel failed to build or launch
        return checks.error_verdict(case, error, source=source())
    try:
        verdict = checks.judge(case, outputs, seed, backend.device)
    except Exception as error:  # noqa: BLE001 - what it returned could not even be compared
        verdict = Verdict(
            case.id, False, f"the result could not be checked: {type(error).__name__}: {error}"
        )
    execution.scrub(outputs)
    return verdict


def load(submission, config, case=None):
    """The submission's module; a file that cannot be loaded fails with its status."""
    try:
        module = submission.module
    except pytest.fail.Exception:
        if case is not None:
            status = submission.error.status
            mistake = "not_implemented" if status == "not_implemented" else "import_error"
            record(config, case, Verdict(case.id, False, str(submission.error), mistake))
        raise
    config._ntgemm_module = module
    return module


def built(config):
    """The submission's kernel compiled for the course's GPU (grader.core.gpu_compile), once per
    session; None when the kernel cannot even be made (the cases then say why)."""
    if not hasattr(config, "_ntgemm_build"):
        module = getattr(config, "_ntgemm_module", None)
        config._ntgemm_build = (
            None if module is None else gpu_build(module, config.getoption("--gpu-target"))
        )
    return config._ntgemm_build


def gpu_build(module, target=None):
    """The module's kernel compiled for ``target`` (grader.core.gpu_compile); None when the
    kernel cannot even be made (the cases then say why)."""
    try:
        kernel = execution.own_kernel(module)
    except Exception:  # noqa: BLE001 - the cases report the error itself
        return None
    return gpu_compile.check(kernel, target)


def _source(submission):
    try:
        with open(submission.path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def record(config, case, verdict):
    results = getattr(config, "_ntgemm_results", None)
    if results is None:
        results = config._ntgemm_results = {}
    results[case.id] = (case, verdict)


def findings(config):
    """The findings on the loaded submission's lines, then on its arrangement (symbolic),
    computed once per session."""
    found = getattr(config, "_ntgemm_findings", None)
    module = getattr(config, "_ntgemm_module", None)
    if found is None and module is not None:
        found = config._ntgemm_findings = source_mistakes.inspect_file(
            module.__file__
        ) + layout.inspect_arrangement(module)
    return found or []


def failure_text(case, verdict, config):
    """The verdict, then the likely cause: the check's own, the arrangement's, or the case's
    (not an arrangement mistake where the arrangement checked right). NineToothed's or
    Triton's words, the same for many cases, are shown under the first case that raised them."""
    key = diagnosis.case_cause(verdict, findings(config))
    if key:
        likely = MISTAKES[key]
        cause = f"likely cause, {likely.title}: {likely.en}\n{likely.zh}"
    elif ruled_out(case.targets, verdict) or (
        case.targets in mistakes.found_by(mistakes.LAYOUT) and layout_right(config)
    ):
        cause = (
            "the summary at the end weighs all failures together.\n"
            "结尾的汇总会综合所有失败给出可能的原因。"
        )
    else:
        target = MISTAKES[case.targets]
        cause = (
            f"this case is there to catch: {target.title}; the summary at the end weighs "
            f"all failures together.\n本用例针对的常见错误：{target.zh}"
        )
    return f"{case.describe()} ({case.why}) failed:\n{_shown_once(verdict, case, config)}\n{cause}"


def _shown_once(verdict, case, config):
    """The verdict's message, NineToothed's or Triton's words in it only where no earlier
    case of the session showed the same words."""
    kit, theirs = checks.library_words(verdict.message)
    if not theirs:
        return verdict.message
    shown = config.__dict__.setdefault("_ntgemm_library_words", {})
    if theirs not in shown:
        shown[theirs] = case.id
        return verdict.message
    return (
        f"{kit}\n(NineToothed's or Triton's message: as under {shown[theirs]} above / "
        f"NineToothed 或 Triton 的原话同上面的 {shown[theirs]})"
    )


def layout_right(config):
    """Whether the loaded submission's arrangement checked right symbolically
    (grader.core.layout.checked_right), once per session."""
    if not hasattr(config, "_ntgemm_layout_right"):
        module = getattr(config, "_ntgemm_module", None)
        config._ntgemm_layout_right = module is not None and layout.checked_right(
            module, layout.inspect_arrangement(module)
        )
    return config._ntgemm_layout_right


def secret_label(seed):
    """The summary's word on the secret: the public default by name, any other by its
    fingerprint, so that a run's output never carries an instructor's secret."""
    if cases.canonical_secret(seed) == str(cases.DEFAULT_SEED):
        return f"seed: {cases.DEFAULT_SEED}"
    return f"secret fingerprint: {cases.fingerprint(seed)}"


def ruled_out(key, verdict):
    """Whether this failure's own evidence excludes mistake ``key``: a wrong value is not
    a nondeterminism, a right dtype and shape, and NaN-free samples no unwritten output."""
    if key == "nondeterministic":
        return verdict.mistake != "nondeterministic"
    if key == "wrong_dtype":
        return "mismatches" in verdict.details
    if key == "unwritten_output":
        samples = verdict.details.get("samples")
        return samples is not None and not any(s["got"] != s["got"] for s in samples)
    return False


def summary(terminalreporter, config):
    """Score / max per case group, then the likely mistakes behind any failures."""
    results = getattr(config, "_ntgemm_results", None)
    if not results:
        return
    write = terminalreporter.write_line
    terminalreporter.section("ntgemm grade")
    module = getattr(config, "_ntgemm_module", None)
    hints = diagnosis.explain(
        findings(config),
        [verdict for _, verdict in results.values()],
        [case for case, _ in results.values()],
        tiles=layout.tile_sizes(module) if module is not None else None,
        reveal=True,
    )
    failing = [case for case, verdict in results.values() if not verdict.passed]
    for line in opening(hints, failing, config):
        write(line)
    backend = config._ntgemm_backend
    write(f"submission: {config.getoption('--submission')}")
    write(f"backend: {backend.name}   {secret_label(config._ntgemm_seed)}")

    groups = {}
    for case, verdict in results.values():
        score, most, passed, total = groups.get(case.group, (0, 0, 0, 0))
        groups[case.group] = (
            score + (case.points if verdict.passed else 0),
            most + case.points,
            passed + verdict.passed,
            total + 1,
        )
    width = max(len(name) for name in groups) + 2
    write(f"{'group'.ljust(width)}{'score':>7}  cases passed")
    for name, (score, most, passed, total) in groups.items():
        write(f"{name.ljust(width)}{score:>3} / {most:<3}{passed:>3} of {total}")
    write(
        f"{'total'.ljust(width)}{sum(g[0] for g in groups.values()):>3} / "
        f"{sum(g[1] for g in groups.values()):<3}"
    )
    skipped = getattr(config, "_ntgemm_gpu_only_skipped", 0)
    if skipped:
        write(
            f"not counted here: {skipped} GPU-only case(s), skipped on the {backend.name} backend"
        )

    build = built(config)
    if build is not None:
        write(f"GPU build: {gpu_compile.summary(build)}")
    if hints:
        write("")
        write("likely causes (most likely first):")
        for number, entry in enumerate(hints, 1):
            write(f"{number}. {entry['title']} [{entry['key']}]")
            write(f"   {entry['en']}")
            write(f"   {entry['zh']}")
            for line in entry["evidence"]:
                write(f"   - {line}")
    folder = config.getoption("--pictures", default=None)
    if folder:
        drawn = (
            picture(module, failing, pathlib.Path(folder) / "arrangement.png")
            if module is not None and failing
            else None
        )
        write("")
        if drawn is not None:
            write(f"picture of the arrangement: {drawn} (yours above, the expected below)")
            write(f"排布示意图：{drawn}（上面一行是你的排布，下面一行是期望的排布）")
        else:
            en, zh = no_picture(module, failing)
            write(f"no picture of the arrangement: {en}")
            write(f"没有画排布示意图：{zh}")


def opening(hints, failing, config):
    """The summary's first lines: the likely mistake, with its first evidence, or that no
    known mistake matches (and, where the arrangement checked right, to look at
    application()), in English and Chinese."""
    if hints:
        top = hints[0]
        return [
            f"likely mistake: {top['title']} [{top['key']}] (all causes below)",
            f"可能的错误：{top['title_zh']}（全部可能原因见下文）",
            *(f"  - {line}" for line in top["evidence"][:1]),
        ]
    if not failing:
        return ["no known mistake: every case passed", "没有已知的错误：所有用例都通过了"]
    lines = [
        "no known mistake matches these failures: the failures above say what went wrong",
        "没有已知的错误与这些失败相符：上面的失败信息说明了哪里出了问题",
    ]
    if layout_right(config):
        lines += [
            "your arrangement looks right (checked symbolically): look at application()",
            "你的排布看起来是对的（已做符号检查）：请检查 application()",
        ]
    return lines


def no_picture(module, failing):
    """Why ``--pictures`` drew nothing, in English and Chinese: a silent option reads as
    a broken one."""
    if module is None:
        return (
            "the file did not load, so there is no arrangement to draw",
            "文件无法加载，没有可画的排布",
        )
    if not failing:
        return "every case passed", "所有用例都通过了"
    if layout.arranged_levels_or_none(module) is None:
        return (
            "arrangement() fails on symbolic tensors, so no program's tiles can be "
            "worked out (the likely causes above say why)",
            "arrangement() 在符号张量上运行失败，无法算出程序拿到的块（原因见上面的可能原因）",
        )
    return (
        "at the failing cases' shapes every program checked gets the tiles it should: "
        "the arrangement looks right, so look at application()",
        "在失败用例的形状下，检查过的每个程序拿到的块都是对的：排布看起来没有问题，"
        "请检查 application()",
    )


def picture(module, failing, path):
    """Draw ``path`` (a PNG) for the first failing case's shape at which a program gets
    other tiles than it should (grader.core.program_tiles); the path, or None."""
    from grader.core import program_tiles, tile_picture

    found = program_tiles.first_difference(module, [case.shape for case in failing])
    if found is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return tile_picture.draw(
        found, layout.tile_sizes(module) or program_tiles.REFERENCE_TILES, path
    )
