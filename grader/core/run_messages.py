"""Why a submission was not graded in full, in English and Chinese: part of
grader.core.messages's table.

A file that does not load (grader.core.loading, grader.batch.grade.grading), a run that
ended early (grader.batch.isolation.sandbox, grader.batch.grade.verdict), an nt_gemm that
is not its kernel's (grader.batch.inside.worker), no file handed in
(grader.batch.grade.intake). As in grader.core.finding_messages, a template whose
``{evidence}`` is another line comes before the templates that could read that line.
"""

RUNS = {
    # how a run ended, after whose run it was (grader.batch.grade.verdict)
    "kernel_run": ("the kernel run: {evidence}", "运行 kernel 的进程：{evidence}"),
    "nt_gemm_run_on": (
        "running your nt_gemm on {case}: {evidence}",
        "在 {case} 上运行你的 nt_gemm 时：{evidence}",
    ),
    "nt_gemm_run": ("running your nt_gemm: {evidence}", "运行你的 nt_gemm 时：{evidence}"),
    "code_was_at": (
        "{evidence}; your code was at line {line}, in `{code}`",
        "{evidence}；当时你的代码在第 {line} 行，`{code}`",
    ),
    "while_importing": ("{evidence} (while importing the file)", "{evidence}（在导入文件时）"),
    "ended_in_hidden": (
        "the process ended abnormally while running the hidden cases",
        "进程在运行隐藏用例时异常退出",
    ),
    "ended_before_return": (
        "the process ended before nt_gemm returned",
        "进程在 nt_gemm 返回之前就结束了",
    ),
    # grader.batch.isolation.sandbox: a limit met, an exit
    "timeout_lowered": (
        "still running after {seconds:.1f} s, its waits for a CPU core not "
        "counted, since it lowered its own priority (the timeout is {limit:g} "
        "s); its processes were killed",
        "运行 {seconds} 秒后仍未结束（它降低了自己的优先级，所以等待 CPU 核的"
        "时间不扣除；时限为 {limit} 秒）；它的进程已被终止",
    ),
    "timeout": (
        "still running after {seconds:.1f} s, not counting {waited:.1f} s spent waiting "
        "for a CPU core (the timeout is {limit:g} s); its processes were killed",
        "运行 {seconds} 秒后仍未结束（不计等待 CPU 核的 {waited} 秒；时限为 {limit} 秒）；"
        "它的进程已被终止",
    ),
    "timeout_wall": (
        "still running after {seconds:.0f} s on the wall clock, {factor:g} times "
        "the {limit:g} s timeout, {waited:.0f} s of it waiting for a CPU core; its "
        "processes were killed",
        "按实际时间运行 {seconds} 秒后仍未结束，是 {limit} 秒时限的 {factor} 倍，"
        "其中 {waited} 秒在等待 CPU 核；它的进程已被终止",
    ),
    "too_many_cores": (
        "kept {cores:.1f} CPU cores busy for {window:g} s, over the {limit:g} a "
        "submission may use; its processes were killed",
        "连续 {window} 秒占用了 {cores} 个 CPU 核，超过了每份提交可用的 {limit} "
        "个；它的进程已被终止",
    ),
    "memory_limit": (
        "used more than {gib:.2f} GiB of host memory; its processes were killed",
        "使用的主机内存超过了 {gib} GiB；它的进程已被终止",
    ),
    "process_ended": (
        "the process ended ({how}) before grading finished",
        "进程在评测完成前结束了（{how}）",
    ),
    "killed_with_code": ("killed by {signal}, exit code {code}", "被 {signal} 终止，退出码 {code}"),
    "killed": ("killed by {signal}", "被 {signal} 终止"),
    "exit_code": ("exit code {code}", "退出码 {code}"),
    # grader.batch.inside.worker: nt_gemm as handed in
    "exit_while_importing": (
        "the file called exit while being imported ({error})",
        "文件在被导入时调用了 exit（{error}）",
    ),
    "asked_to_exit": (
        "nt_gemm asked the process to exit ({error})",
        "nt_gemm 要求进程退出（{error}）",
    ),
    "not_float16_output": (
        "nt_gemm returned a {dtype} tensor of shape {shape}, not float16 ({m}, {n})",
        "nt_gemm 返回的是形状为 {shape} 的 {dtype} 张量，而不是 float16 的 ({m}, {n})",
    ),
    "wrapper_failed": (
        "your nt_gemm failed on the public case {case}, so the file as handed in "
        "does not compute C (score 0):",
        "你的 nt_gemm 在公开用例 {case} 上出错了，所以交上来的文件算不出 C（得 0 分）：",
    ),
    # grader.batch.grade: refused, flagged
    "kernel_refused": (
        "arrangement() or application() uses what a kernel may not (see flags); "
        "nothing was run and the score is 0",
        "arrangement() 或 application() 用到了 kernel 不允许使用的内容（见标记）；"
        "没有运行任何代码，得 0 分",
    ),
    "guard_stopped": (
        "anti-cheat evidence: the kernel run did what no kernel build needs (see "
        "flags); the score is 0",
        "违规证据：运行 kernel 的进程做了构建 kernel 用不到的事（见标记）；得 0 分",
    ),
    "not_its_kernel": (
        "anti-cheat evidence: nt_gemm returned something other than its own "
        "kernel's output (see flags); the score is 0",
        "违规证据：nt_gemm 返回的不是它自己的 kernel 的输出（见标记）；得 0 分",
    ),
    "not_its_kernel_flag": (
        "nt_gemm: on {case} it did not return its kernel's output "
        "({differing} of {total} elements differ from what the grader's own "
        "launch of arrangement() and application() wrote)",
        "nt_gemm：在 {case} 上它返回的不是它的 kernel 的输出（{total} 个元素中"
        "有 {differing} 个与评测程序自己启动 arrangement() 和 application() "
        "写出的结果不同）",
    ),
    # a case that was not run
    "kernel_was_refused": ("the kernel was refused", "kernel 被拒绝，没有运行"),
    "run_ended": ("the kernel run ended ({ended})", "运行 kernel 的进程提前结束了（{ended}）"),
    "no_output": (
        "the kernel run sent no output for this case",
        "运行 kernel 的进程没有发回这个用例的输出",
    ),
    "no_submission_file": ("no submission file", "没有提交文件"),
    "case_not_run": ("not run", "未运行"),
    # grader.core.loading, grader.batch.grade.grading: a file that does not load
    "syntax_error": (
        "syntax error in {file}, line {line}: {error}",
        "{file} 第 {line} 行有语法错误：{error}",
    ),
    "cannot_compile": ("{file} cannot be compiled: {error}", "{file} 无法编译：{error}"),
    "does_not_define": ("{file} does not define {names}", "{file} 没有定义 {names}"),
    "import_failed": ("importing {file} failed with {error}", "导入 {file} 时出错：{error}"),
    # grader.core.nesting: a file the grader does not read
    "too_deep": (
        "{file}, line {line}: the code there nests more than {limit} levels deep (a "
        "long chain such as `1 + 1 + ... + 1`, or brackets, calls or blocks inside one "
        "another); the grader reads no file nested that deep, so nothing of it was "
        "run and the score is 0: split it into shorter statements",
        "{file} 第 {line} 行：这里的代码嵌套超过了 {limit} 层（比如 `1 + 1 + ... + 1` "
        "这样的长链，或者层层嵌套的括号、调用或代码块）；评测程序不读取嵌套这么深的文件，"
        "所以没有运行其中任何代码，得 0 分：请把它拆成较短的语句",
    ),
    "two_unfinished": (
        "{first} and {second} are not filled in yet: replace the "
        "`raise NotImplementedError(...)` placeholder in {first} and {second} "
        "with your code",
        "{first} 和 {second} 还没有写完：请把 {first} 和 {second} 中的 "
        "`raise NotImplementedError(...)` 占位代码换成你的实现",
    ),
    "unfinished": (
        "{name} is not filled in yet: replace the `raise NotImplementedError(...)` "
        "placeholder in {name} with your code",
        "{name} 还没有写完：请把 {name} 中的 `raise NotImplementedError(...)` 占位代码换成你的实现",
    ),
    # grader.batch.grade.intake: no file to grade
    "several_python_files": (
        "{evidence}; more than one Python file ({listed}), so none was taken",
        "{evidence}；其中有不止一个 Python 文件（{listed}），所以一个也没有采用",
    ),
    "none_in_folder": ("no {file} in the folder {folder}", "文件夹 {folder} 中没有 {file}"),
    "none_handed_in_of_several": (
        "no {file} among the files handed in ({listed}); more than "
        "one is a Python file, so none was taken",
        "交上来的文件（{listed}）中没有 {file}；其中不止一个是 Python 文件，所以一个也没有采用",
    ),
    "none_handed_in": (
        "no {file} among the files handed in ({listed}); none is a Python file",
        "交上来的文件（{listed}）中没有 {file}；其中没有 Python 文件",
    ),
    "none_in_archive": ("no {file} in {archive}", "{archive} 中没有 {file}"),
    "archive_rejected": ("archive rejected: {why}", "压缩包被拒收：{why}"),
    "archive_unreadable": ("archive unreadable: {why}", "压缩包无法读取：{why}"),
    "could_not_read": (
        "could not read this entry ({why}); the grader gave it no points: open "
        "it, and grade it by hand or fix it and run the same command again",
        "无法读取这一项（{why}），没有给分：请打开它，手工评分，或者修好后重新运行同一条命令",
    ),
    "could_not_grade": (
        "could not grade: the grader itself failed on this file ({why}), not "
        "through the student's fault; 0 points for now. Run the same command "
        "again to grade it again, and report the error if it stays",
        "无法评分：评测程序自身在这个文件上出错（{why}），不是学生的错；暂记 0 分。"
        "请重新运行同一条命令再评一次；如果仍然出错，请报告这个错误",
    ),
    # grader.batch.grade.intake: a student's entries that were seen but not graded
    "seen_another_file": ("another file of the same upload", "同一次上传中的另一个文件"),
    "seen_nothing_to_grade": ("nothing to grade in it ({why})", "其中没有可评分的文件（{why}）"),
    "seen_older": (
        "an older entry of the same student; graded {graded}, the latest",
        "同一学生较早的一项；评分用的是最新的 {graded}",
    ),
}
