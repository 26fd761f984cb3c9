"""Inside a timing worker, when the batch asks for a what-if (``grade --what-if``): the
student's own ``arrangement()`` and ``application()`` rebuilt with the benchmark's other
tiles, warps and stages (benchmarks.what_if.CANDIDATES), compiled ahead like the kernel
itself, then checked and timed with the speed phase's method (speed_probe.measure).

Advice only, and built so that it can never cost a grade: it is made (the student's
code runs again) before the build guard's last check ahead of any launch, compiled after
the kernel that is graded, timed after every graded size, and stops starting new work once
its own budget of wall seconds is spent, well inside the extra time the parent gave
the run for it (grader.batch.isolation.time_policy.WHAT_IF_ALLOWANCE_S).
"""

import time

from benchmarks import what_if
from grader.batch.inside import protocol, speed_probe

# grader.core.retile.tiles_used reads the tiles through grader.core.layout: imported here,
# before the build guard's snapshot, since a grader module appearing later reads as a change
# of it.
from grader.core import layout  # noqa: F401


OUT_OF_TIME = "not tried: the what-if's time was spent"


class Trials:
    """The what-if of one timing run: its plan, then one build per other configuration."""

    def __init__(self, module, kernel, size, device, budget_s):
        self.size, self.device = tuple(size), device
        self.budget_s = budget_s
        try:  # the plan runs the student's arrangement on symbolic tensors
            self.plan = what_if.plan(module, kernel)
        except Exception:  # noqa: BLE001 - no BLOCK_SIZE_M, an arrangement that raises...
            self.plan = what_if.Plan(reason=what_if.UNREADABLE)
        self.builds = []  # (Config, kernel or None, status if no kernel, why)
        self.module = module
        self.started = None  # when build() (then report()) began

    def _spent(self):
        """Whether this step's budget is spent (building and compiling share one, timing has
        its own)."""
        return time.monotonic() - self.started > self.budget_s

    def build(self):
        """Make every other configuration, while time lasts. The student's arrangement runs
        here again, so the worker calls this before the build guard's last check ahead of
        any launch (the check after a launch leaves Triton's modules alone)."""
        self.started = time.monotonic()
        for config in self.plan.others:
            if self._spent():
                self.builds.append((config, None, what_if.SKIPPED, OUT_OF_TIME))
                continue
            try:
                handle = what_if.build(self.module, config)
            except Exception as error:  # noqa: BLE001 - the student's code, or a config refused
                self.builds.append((config, None, what_if.BUILD_FAILED, what_if.one_line(error)))
                continue
            self.builds.append((config, handle, "", ""))

    def compile(self):
        """Compile each build without a launch, after the graded kernel, while time lasts."""
        for number, (config, handle, _, _) in enumerate(self.builds):
            if handle is None:
                continue
            if self._spent():
                self.builds[number] = (config, None, what_if.SKIPPED, OUT_OF_TIME)
                continue
            speed_probe.precompile(handle, [self.size], self.device)

    def report(self, channel):
        """Send the plan, then one WhatIfTiming per configuration, while time lasts."""
        channel.report(protocol.WhatIfPlan.of(self.plan))
        self.started = time.monotonic()
        for config, handle, status, note in self.builds:
            if handle is None:
                channel.report(protocol.WhatIfTiming.of(config, status, note=note))
                continue
            if self._spent():
                channel.report(protocol.WhatIfTiming.of(config, what_if.SKIPPED, note=OUT_OF_TIME))
                continue
            try:
                fields = speed_probe.measure(handle, *self.size, self.device)
            except Exception as error:  # noqa: BLE001 - whatever the rebuilt kernel raises
                channel.report(
                    protocol.WhatIfTiming.of(config, what_if.WRONG, note=what_if.one_line(error))
                )
                continue
            if fields["verdict"] != "PASS":
                channel.report(
                    protocol.WhatIfTiming.of(
                        config,
                        what_if.WRONG,
                        note=f"{fields['wrong']} elements out of tolerance at "
                        f"{'x'.join(map(str, self.size))}",
                    )
                )
                continue
            channel.report(
                protocol.WhatIfTiming.of(
                    config, what_if.TIMED, kernel=fields["kernel"], torch=fields["torch"]
                )
            )
