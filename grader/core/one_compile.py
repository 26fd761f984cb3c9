"""Compile a correctness run's kernel once, not once per pattern of its argument values.

Triton compiles a kernel again for each pattern of values it specializes on: an integer
argument equal to 1 becomes a constant, and an integer or pointer divisible by 16 gets an
alignment hint. The catalogue's shapes, strides and views make about ten such patterns, so
a GPU kernel run compiled one kernel ten times, four times as long over the GPU catalogue as
compiling once (docs/stress-runs/timeline.md, "Measurements behind the rules"). The patterns
change how fast the code runs, not what it computes, so a run that checks the numbers needs
none.

Only a kernel that built for the course's GPU (grader.core.gpu_compile, which compiles it
with every alignment hint, the deepest pipelining) is compiled once. One that did not build
compiles as each case specializes it, so each case meets the compiler's verdict as the timed
kernel would: 128x128x128 tiles run out of shared memory at the sizes divisible by 16 only,
and compiled without hints would pass them all. A timing run keeps every hint: there,
speed is the point.
"""


def for_cases(handle, build):
    """``compile_once(handle)`` when ``build`` (a gpu_compile.Build) says it built."""
    if build is not None and build.ok:
        compile_once(handle)
    return handle


def compile_once(handle):
    """Turn value specialization off for ``handle``'s kernel (a ``ninetoothed.make`` handle)
    before its first launch, so that every case shares one compile; return ``handle``."""
    function = getattr(handle, "_kernel", None)
    while function is not None and not hasattr(function, "params"):
        function = getattr(function, "fn", None)  # an Autotuner or Heuristics around it
    for param in getattr(function, "params", ()):
        param.do_not_specialize = True
        param.do_not_specialize_on_alignment = True
    return handle
