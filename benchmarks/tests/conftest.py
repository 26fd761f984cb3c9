"""Fixtures shared by the tests of the TMA kernels (persistent_tma, test_reference_configs).

The Triton interpreter runs tensor descriptors, but it does not see NineToothed's
``triton.language.constexpr`` annotations: it reads them as strings and knows only
``constexpr`` and ``tl.constexpr``, so it makes the block sizes tensors, which
``make_tensor_descriptor`` refuses. On the interpreter, ``tma_ready`` maps that one
spelling to ``constexpr`` while a test runs. A GPU compiles the kernels unmended.
"""

import pytest
import torch


@pytest.fixture
def tma_ready(backend, monkeypatch):
    """A GPU of compute capability 9.0 or later, or the interpreter with the mend above."""
    if not backend.is_interpreter:
        if torch.cuda.get_device_capability() < (9, 0):
            pytest.skip("TMA loads need a GPU of compute capability 9.0 or later")
        return
    import triton.runtime.jit as triton_jit

    normalize = getattr(triton_jit, "_normalize_ty", None)
    if normalize is None:
        pytest.skip(
            "this Triton's interpreter reads annotations another way; the mend "
            "for NineToothed's constexprs does not apply"
        )

    def constexpr_too(annotation):
        if isinstance(annotation, str) and annotation.strip() == "triton.language.constexpr":
            return "constexpr"
        return normalize(annotation)

    monkeypatch.setattr(triton_jit, "_normalize_ty", constexpr_too)
