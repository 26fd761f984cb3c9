"""The GPU time other processes took from a run (grader.batch.isolation.gpu_share), from a
stand-in NVML: credited only to a run that used the GPU, and ``measured`` only once NVML
has named a process of some run."""

import sys
import types

import pytest

from grader.batch.isolation import gpu_share


class FakeNvml(types.ModuleType):
    """pynvml's four calls the sampler makes; ``rows`` is what the next ask returns."""

    class NVMLError(Exception):
        pass

    class NVMLError_NotFound(NVMLError):  # noqa: N801 - pynvml's name
        pass

    def __init__(self):
        super().__init__("pynvml")
        self.rows = []

    def nvmlInit(self):  # noqa: N802 - pynvml's names
        pass

    def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802
        assert isinstance(index, int)
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):  # noqa: N802
        return uuid

    def nvmlDeviceGetProcessUtilization(self, handle, last):  # noqa: N802
        if not self.rows:
            raise self.NVMLError_NotFound()
        rows, self.rows = self.rows, []
        return [types.SimpleNamespace(pid=pid, smUtil=util, timeStamp=last + 1)
                for pid, util in rows]


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(gpu_share, "_samplers", {})
    monkeypatch.setattr(gpu_share.Sampler, "_run", lambda self: None)  # polled by hand here
    return fake


def _ask(nvml, sampler, rows, covered=1.0):
    nvml.rows = rows
    sampler.before -= covered  # as if ``covered`` seconds passed since the last ask
    sampler.poll()


def test_a_run_that_used_the_gpu_is_not_charged_what_others_held(nvml):
    sampler = gpu_share.sampler(0)
    share = gpu_share.Share(0)
    since = sampler.before
    _ask(nvml, sampler, [(11, 20), (99, 80)])  # our pid 11 at 20%, a neighbour at 80%
    _ask(nvml, sampler, [(99, 100)])
    credit = share.credit({10, 11}, since)
    assert share.own_s == pytest.approx(0.2, abs=0.05)
    assert credit == share.others_s == pytest.approx(1.8, abs=0.1)
    assert share.measured and sampler.attributed


def test_a_run_that_never_used_the_gpu_gets_no_credit(nvml):
    sampler = gpu_share.sampler(0)
    share = gpu_share.Share(0)
    since = sampler.before
    _ask(nvml, sampler, [(99, 100)])
    assert share.credit({10}, since) == 0.0 and share.others_s > 0
    # NVML never named a process of any run: maybe its pids are not ours, so not measured.
    assert not share.measured
    other = gpu_share.Share(0)
    _ask(nvml, sampler, [(20, 50)])
    other.credit({20}, since)
    assert other.measured and share.measured  # now NVML's pids are known to be ours


def test_only_samples_after_the_run_started_count(nvml):
    sampler = gpu_share.sampler(0)
    _ask(nvml, sampler, [(11, 100), (99, 100)])
    since = sampler.samples[-1][0]
    _ask(nvml, sampler, [(11, 50), (99, 50)])
    share = gpu_share.Share(0)
    assert share.credit({11}, since) == pytest.approx(0.5, abs=0.05)


def test_shares_over_one_gpu_are_capped_at_the_time_that_passed(nvml):
    sampler = gpu_share.sampler(0)
    since = sampler.before
    _ask(nvml, sampler, [(11, 10), (98, 90), (99, 90)])
    own, others = sampler.seconds({11}, since)
    assert others == pytest.approx(1.0, abs=0.05)


def test_a_gpu_is_found_as_cuda_visible_devices_names_it(nvml):
    """The batch's devices are CUDA_VISIBLE_DEVICES entries, strings: on the H200 the
    sampler was asked for "0" as an index, failed, and no run was ever measured."""
    assert gpu_share.sampler("0").handle == 0
    assert gpu_share.sampler("GPU-5d1e-77").handle == "GPU-5d1e-77"
    assert gpu_share.sampler("MIG-1/2/3") is None


def test_no_nvml_means_no_share_and_no_credit(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    monkeypatch.setattr(gpu_share, "_samplers", {})
    share = gpu_share.Share(0)
    assert share.sampler is None and share.credit({1}, 0.0) == 0.0 and not share.measured
    assert gpu_share.Share(None).sampler is None  # the interpreter: nothing to ask
