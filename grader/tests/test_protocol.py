"""The records that cross the sandbox's pipes: what the worker encodes is what the parent
decodes, and what the parent keeps of a hostile report is bounded and typed."""

import io
import json

import pytest

from grader.batch.inside import protocol
from grader.batch.isolation import conversation
from grader.core.gpu_compile import Build

BUILD = Build(
    "sm_90", True, registers=128, spilled_bytes=0, shared_bytes=65536, num_warps=4, num_stages=3
)


def _over_the_pipe(record, payload=b""):
    stream = io.BytesIO()
    protocol.send_record(stream, record, payload)
    stream.seek(0)
    message = protocol.receive(stream, lambda kind, fields: len(payload))
    assert message.kind == record.KIND and message.payload == payload
    return json.loads(json.dumps(message.fields))


@pytest.mark.parametrize(
    "record",
    [
        protocol.Loaded("ok"),
        protocol.Loaded("import_error", "NameError: name 'ntl' is not defined"),
        protocol.Diagnosis(
            [{"mistake": "expand_axis", "message": "lhs repeats over M"}], [64, 64, 32]
        ),
        protocol.Diagnosis([], None),
        protocol.Diagnosis([], [64, 64, 64], True),
        protocol.CaseResult(3, seconds=0.25),
        protocol.CaseResult(
            0, error="nt_gemm asked the process to exit (SystemExit(0))", exited=True
        ),
        protocol.Ready("", 8, 3),
        protocol.SizeTiming(
            4096, 4096, 4096, "PASS", kernel=(0.5, 0.49, 0.51), torch=(0.2, 0.19, 0.21)
        ),
        protocol.SizeTiming(4095, 4095, 4095, "FAIL", wrong=12),
        protocol.Stopped("open of '/etc/passwd'"),
        protocol.Stopped(
            "the generated kernel breaks the kit's rules", ("BLOCK_SIZE_M", "ALPHA"), True
        ),
        protocol.Stopped("the generated kernel breaks the kit's rules", (), True),
    ],
)
def test_a_record_arrives_as_it_was_sent(record):
    fields = _over_the_pipe(record, b"\x00\x3c" * 4 if record.KIND == "case" else b"")
    if isinstance(record, protocol.SizeTiming):
        assert protocol.SizeTiming.from_fields((record.m, record.n, record.k), fields) == record
    else:
        assert type(record).from_fields(fields) == record


def test_an_unknown_load_status_is_a_protocol_error():
    with pytest.raises(protocol.ProtocolError, match="load status 'passed'"):
        protocol.Loaded.from_fields({"status": "passed", "message": ""})


def test_what_the_parent_keeps_of_a_hostile_report_is_bounded_and_typed():
    case = protocol.CaseResult.from_fields(
        {"index": 1, "error": "x" * 10**6 + "\x1b[2J", "exited": "yes", "seconds": "fast"}
    )
    assert len(case.error) < 9000 and "\x1b" not in case.error
    assert case.exited is True and case.seconds == 0.0
    ready = protocol.Ready.from_fields({"note": None, "num_warps": True, "num_stages": 10**9})
    assert (ready.note, ready.num_warps, ready.num_stages) == ("", "unknown", "unknown")
    found = protocol.Diagnosis.from_fields(
        {"findings": [{"mistake": 3}] * 50, "tiles": [64, 0, 64], "build": BUILD.to_fields()}
    )
    # A worker's claim of a build is not even read: the parent's compile gate makes it.
    assert found == protocol.Diagnosis([], None)
    assert Build.from_fields({"target": "sm_90", "ok": "yes"}).ok is False
    # The names a refusal is about alone are kept whole or not at all (then it stays flagged).
    for unbound in ("BLOCK_SIZE_M", ["a b"], ["x"] * 21, [["x"]], ["x" * 101], [3]):
        assert protocol.Stopped.from_fields({"why": "", "unbound": unbound}).unbound == ()
    for claim in ("yes", 1, [True], None):  # only True itself is a claim of a kernel that
        assert (
            protocol.Stopped.from_fields({"why": "", "unbuildable": claim}).unbuildable is False
        )  # cannot build (the parent then reads the source for its cause)


def test_a_pass_without_both_timings_is_an_error():
    timing = protocol.SizeTiming.from_fields(
        (64, 64, 64), {"verdict": "PASS", "kernel": [0.1, 0.1, 0.1], "torch": [0.3, 0.2, 0.1]}
    )
    assert timing.verdict == "ERROR" and timing.kernel is None and timing.torch is None


def test_matrices_cross_as_the_job_says():
    import torch

    job = protocol.Job(0, 3, 5, 4, ("first", "second"))
    lhs, rhs = torch.randn(3, 4).half(), torch.randn(4, 5).half()
    got_lhs, got_rhs = job.inputs(protocol.matrices([lhs, rhs]))
    assert torch.equal(got_lhs, lhs) and torch.equal(got_rhs, rhs)
    first, second = torch.randn(3, 5).half(), torch.full((3, 5), float("nan")).half()
    outputs = job.outputs(protocol.matrices([first, second.t().contiguous().t()]))
    assert list(outputs) == ["first", "second"] and torch.equal(outputs["first"], first)
    assert (
        outputs["second"].isnan().all() and len(protocol.matrices([first])) == job.output_bytes // 2
    )
    assert job.outputs(b"") == {}


PICTURE = {
    "shape": [128, 256, 192],
    "program": 4,
    "grids": {"lhs": [2, 256], "rhs": [2, 4], "output": [2, 4]},
    "tiles": {
        "lhs": [[0, 64, 0, 64], [0, 64, 64, 128], [0, 64, 128, 192]],
        "rhs": [[0, 64, 0, 64], [64, 128, 0, 64], [128, 192, 0, 64]],
        "output": [[64, 128, 0, 64]],
    },
}


def test_a_phase_s_inputs_become_bytes_once_and_stay_the_bytes_of_those_inputs(monkeypatch):
    """Every file of a batch is sent the same input tensors: the parent makes their bytes
    once. A cache full of other phases drops the oldest, which is then made again."""
    import torch

    made = []
    real = protocol.matrices
    monkeypatch.setattr(protocol, "matrices", lambda tensors: made.append(1) or real(tensors))
    monkeypatch.setattr(conversation, "_payloads", type(conversation._payloads)())
    lhs, rhs = torch.randn(3, 4).half(), torch.randn(4, 5).half()
    assert conversation._inputs_payload([lhs, rhs]) == real([lhs, rhs]) and len(made) == 1
    assert conversation._inputs_payload([lhs, rhs]) == real([lhs, rhs]) and len(made) == 1
    assert conversation._inputs_payload([rhs, lhs]) == real([rhs, lhs]) and len(made) == 2
    others = [
        [torch.full((2, 2), float(index)).half()] for index in range(conversation.PAYLOADS_KEPT)
    ]
    for tensors in others:
        assert conversation._inputs_payload(tensors) == real(tensors)
    assert conversation._inputs_payload([lhs, rhs]) == real([lhs, rhs])
    assert len(made) == 3 + conversation.PAYLOADS_KEPT


def test_an_arrangement_arrives_as_sent_only_at_a_public_shape_and_in_bounds():
    fields = _over_the_pipe(protocol.Arrangement(PICTURE))
    assert protocol.Arrangement.from_fields(fields, {(128, 256, 192)}).picture == PICTURE
    with pytest.raises(protocol.ProtocolError, match="no public case"):
        protocol.Arrangement.from_fields(fields, {(65, 97, 130)})  # a hidden shape, say
    hostile = [
        {**PICTURE, "program": -1},
        {**PICTURE, "grids": {**PICTURE["grids"], "rhs": [2] * 9}},
        {**PICTURE, "tiles": {**PICTURE["tiles"], "output": [[0, 64, 0, 300]]}},
        {**PICTURE, "tiles": {**PICTURE["tiles"], "lhs": [[0, 64, 0, 64]] * 65}},
        {**PICTURE, "tiles": {**PICTURE["tiles"], "rhs": [[5, 5, 0, 1]]}},
    ]
    for picture in hostile:
        with pytest.raises(protocol.ProtocolError):
            protocol.Arrangement.from_fields(picture, {(128, 256, 192)})


@pytest.mark.parametrize("shape", [[[128], [256], [192]], [{}, 256, 192], [128.0, 256, 192]])
def test_an_arrangement_whose_shape_is_not_whole_numbers_ends_the_run_not_the_batch(shape):
    """The nt_gemm run runs the whole file, which can write to the channel's descriptor (as
    attack_sources.BOMB_HEADER does): an arrangement whose shape held a list raised TypeError
    in the parent's conversation, which ended the whole batch; one of 128.0 was kept, and the
    picture drawn from it raised in the parent as well."""
    import torch

    class Scripted:
        """A worker that says hello, loads, and sends one arrangement in the public phase."""

        def __init__(self):
            self.messages = [
                ("hello", {}),
                ("loaded", {"status": "ok", "message": ""}),
                ("arrangement", {**PICTURE, "shape": shape}),
            ]
            self.ended = None

        def receive(self, accept):
            if self.ended or not self.messages:
                return None
            return protocol.Message(*self.messages.pop(0))

        def send(self, kind, payload=b"", **fields):
            pass

        def stop(self, kind, detail):
            self.ended = (kind, detail)

    worker, report = Scripted(), conversation.RunReport(ending=None, stage="starting")
    job = protocol.Job(0, 128, 256, 192, ("output",))
    phase = [
        (
            job,
            torch.zeros(128, 192, dtype=torch.float16),
            torch.zeros(192, 256, dtype=torch.float16),
        )
    ]
    conversation._converse(
        worker,
        lambda kind, fields: 0,
        [phase],
        report,
        gate=None,
        grow=None,
        extend=lambda tiles: None,
        steps=conversation._Steps(report),
    )
    assert worker.ended[0] == "crashed" and "malformed" in worker.ended[1]
    assert report.arrangement is None


def test_a_timing_faster_than_any_launch_is_an_error_not_a_crash_of_the_speed_phase():
    """A timing run's report of 1e-300 ms passed as a PASS; its infinite rate made the speed
    entry (and feedback.md and the card) raise in the parent, which ends the batch."""
    from grader.batch.timing import speed
    from grader.tests.test_speed import H200_ENV, passed_record

    fields = {"verdict": "PASS", "kernel": [1e-300] * 3, "torch": [0.2] * 3}
    reported = protocol.SizeTiming.from_fields((4096, 4096, 4096), fields)

    class Run:
        stopped = note = ""
        sizes, results, launch, ending = [(4096, 4096, 4096)], [reported], {}, None
        prepare_s = measure_s = 0.0

    record = passed_record()
    record["speed"] = speed.entry(Run(), record, H200_ENV)
    assert "failed at 4096" in record["speed"]["message"] and reported.verdict == "ERROR"


@pytest.mark.parametrize("index", [[0], {"a": 1}, True, 1.0, None, 7])
def test_a_case_report_for_no_case_sent_is_a_protocol_error_not_a_dead_reader(index):
    """The reader thread asks how many bytes a message may carry; an index that is not one
    of the sent cases' (a list raised TypeError there, killing the thread) must be refused."""
    with pytest.raises(protocol.ProtocolError, match="never sent"):
        conversation.payload_bytes({0: 16, 1: 32}, "case", {"index": index})
    assert conversation.payload_bytes({0: 16, 1: 32}, "case", {"index": 1}) == 32


def test_a_header_nested_past_the_recursion_limit_is_a_protocol_error_not_a_dead_reader():
    """json.loads raises RecursionError (not a ValueError) on a header of 100,000 nested
    lists, well under MAX_HEADER: it ended the reader thread, and the parent waited out the
    run's whole time limit for a message that could no longer come."""
    header = b"[" * 100_000 + b"]" * 100_000
    stream = io.BytesIO(protocol._LENGTH.pack(len(header)) + header)
    with pytest.raises(protocol.ProtocolError, match="malformed"):
        protocol.receive(stream, lambda kind, fields: 0)


def test_a_header_nested_hundreds_deep_is_refused_before_anything_reprs_it():
    """900 nested lists parse on the reader's thread, but repr() of them in a what-if's
    config or note (or str() in a build's fields) raised RecursionError on the speed
    phase's deeper stack, which stopped the batch."""
    nested = json.loads("[" * 900 + "]" * 900)
    stream = io.BytesIO()
    protocol.send(stream, "what_if", config=nested, status="timed")
    stream.seek(0)
    with pytest.raises(protocol.ProtocolError, match="nested"):
        protocol.receive(stream, lambda kind, fields: 0)
    arrangement = {
        "shape": [64, 64, 64],
        "program": 0,
        "grids": {"lhs": [1, 1]},
        "tiles": {"lhs": [[0, 64, 0, 32]]},
    }
    stream = io.BytesIO()
    protocol.send(stream, "arrangement", **arrangement)
    stream.seek(0)
    assert protocol.receive(stream, lambda kind, fields: 0).fields == arrangement
