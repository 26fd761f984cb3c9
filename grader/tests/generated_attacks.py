"""Submissions whose source passes the kit's source check while the kernel NineToothed
generates from them holds what a kernel may not: the attacks on what runs.

Each family is a way the generated file differs from the student's source: a helper
inlined with a parameter left at its default (a bare name, which Triton resolves among its
own builtins), a name bound only in a branch Triton drops, an expression Triton evaluates
while compiling (an assert's or a raise's message), builtins and constructs the source
check accepts, and tiles written back into the inputs or read from the output, directly or
through an inlined helper. Built as edits of the model answer
(grader.tests.source_edits); grader/tests/test_generated_kernel.py holds each one to the
check that decides (grader.core.generated_kernel), in pytest and in the batch.
"""

from grader.tests.source_edits import Variant, class_command, function

LOOP = """
    accumulator = ntl.zeros(output.shape, dtype=ntl.float32)
    for k in range(lhs.shape[0]):
        accumulator += ntl.dot(lhs[k], rhs[k])
"""


def _application(
    before="", inside="", after="    output = accumulator  # noqa: F841\n", helpers=""
):
    """application() as the model answer writes it, with lines added around its loop."""
    loop = LOOP.replace(
        "accumulator += ntl.dot(lhs[k], rhs[k])\n",
        "accumulator += ntl.dot(lhs[k], rhs[k])\n" + inside,
    )
    return helpers + "\ndef application(lhs, rhs, output):\n" + before + loop + after


# What each attack's generated kernel is refused for: a fragment of the violation.
ATTACKS = {
    "inlined_default_builtin": (
        Variant(
            "a helper whose parameter, left at its default, is named getattr: inlined, the bare "
            "name is Triton's builtin getattr",
            (
                function(
                    "application",
                    _application(
                        helpers="\ndef _scaled(tile, factor, getattr=max):\n    return getattr(tile, factor)\n",
                        inside="        accumulator = _scaled(accumulator, 1)\n",
                    ),
                ),
            ),
        ),
        "calls `getattr`",
    ),
    "dead_branch_builtin": (
        Variant(
            "binds isinstance only in a branch Triton drops, so Triton's own isinstance answers",
            (
                function(
                    "application",
                    _application(
                        before="    if 0:\n        isinstance = max\n",
                        after="    if isinstance(accumulator, 1):\n        accumulator = accumulator * 1\n"
                        "    output = accumulator  # noqa: F841\n",
                    ),
                ),
            ),
        ),
        "binds `isinstance`",
    ),
    "assert_message_expression": (
        Variant(
            "an assert message with an expression, which Triton evaluates while compiling",
            (
                function(
                    "application",
                    _application(
                        before='    assert lhs.shape[0] >= 0, f"{max(lhs.shape[0], 0)} tiles"\n'
                    ),
                ),
            ),
        ),
        "assert message",
    ),
    "raise_message_expression": (
        Variant(
            "a raise whose message is an expression",
            (
                function(
                    "application",
                    _application(
                        before='    if lhs.shape[0] < 0:\n        raise ValueError(f"{lhs.shape[0]}")\n'
                    ),
                ),
            ),
        ),
        "a raise of something other than",
    ),
    "unlisted_builtin_call": (
        Variant(
            "builtins the source check accepts and Triton would evaluate at compile time",
            (
                function(
                    "application",
                    _application(
                        before="    steps = len(tuple(map(abs, (1, 2))))\n",
                        inside="        accumulator = accumulator * steps / 2\n",
                    ),
                ),
            ),
        ),
        "calls `tuple`",
    ),
    "comprehension": (
        Variant(
            "a list comprehension in the kernel",
            (
                function(
                    "application",
                    _application(
                        after="    parts = [accumulator for _ in range(1)]\n"
                        "    output = parts[0]  # noqa: F841\n"
                    ),
                ),
            ),
        ),
        "`ListComp`",
    ),
    "store_into_input": (
        Variant(
            "writes a tile back into lhs: a later launch could find its own marks there",
            (
                function(
                    "application",
                    _application(
                        after="    output = accumulator  # noqa: F841\n"
                        "    lhs = accumulator.to(ntl.float16)  # noqa: F841\n"
                    ),
                ),
            ),
        ),
        "stores into an input",
    ),
    "store_into_input_through_helper": (
        Variant(
            "a helper whose parameter is named rhs assigns it: inlined, NineToothed stores into rhs",
            (
                function(
                    "application",
                    _application(
                        helpers="\ndef _mark(tile, rhs=0):\n    rhs = tile\n",
                        after="    output = accumulator  # noqa: F841\n"
                        "    _mark(accumulator.to(ntl.float16))\n",
                    ),
                ),
            ),
        ),
        "stores into an input",
    ),
    "output_read_through_helper": (
        Variant(
            "a helper whose parameter, left at its default, is named output: inlined, it reads "
            "what C already holds",
            (
                function(
                    "application",
                    _application(
                        helpers="\ndef _add_old(tile, output=0):\n    tile += output\n",
                        after="    _add_old(accumulator)\n    output = accumulator  # noqa: F841\n",
                    ),
                ),
            ),
        ),
        "reads the output",
    ),
}

if __name__ == "__main__":
    class_command(
        {name: variant for name, (variant, _) in ATTACKS.items()},
        "grader.tests.generated_attacks",
        "the attacks on the generated kernel",
    )
