"""Turn a run's results into the CSV (one row per size) and the printed table.

Each row is one size of one implementation (NineToothed, as the student calls
it) with torch.mm's numbers from the same run beside it, so every row stands on
its own: the size, the verdict, the times and rates, the tile configuration,
the roofline columns and the whole environment (docs/benchmarking.md, "CSV fields").

Roofline columns come from ``ledger.formulas`` and need a GPU the formulas
know (``machine_for_gpu_name``); on any other GPU they are left empty.
"""

import datetime
import pathlib
import re
import socket
import uuid

import pandas as pd

from benchmarks import environment
from benchmarks.harness import DTYPE_BYTES, IMPLEMENTATION, PASS, size_label
from benchmarks.timing import METHOD, Timing, tflops
from ledger import formulas

# The fields contract 4 requires on every row (tests check them).
CONTRACT_COLUMNS = (
    "m",
    "n",
    "k",
    "implementation",
    "median_ms",
    "tflops",
    "torch_mm_median_ms",
    "torch_mm_tflops",
    "ratio_vs_torch_mm",
    "verdict",
    "autotune",
    "block_m",
    "block_n",
    "block_k",
    "gpu_name",
    "driver",
    "cuda",
    "torch_version",
    "triton_version",
    "ninetoothed_version",
)

COLUMNS = (
    "run_id",
    "size",
    "m",
    "n",
    "k",
    "implementation",
    "submission",
    "submission_sha256",
    "verdict",
    # NineToothed as called (nt_gemm, output allocation included)
    "median_ms",
    "p20_ms",
    "p80_ms",
    "tflops",
    # torch.mm in the same run, on the same operands
    "torch_mm_median_ms",
    "torch_mm_p20_ms",
    "torch_mm_p80_ms",
    "torch_mm_tflops",
    "ratio_vs_torch_mm",
    # the kernel alone on a preallocated output (empty when it cannot be called cleanly)
    "kernel_median_ms",
    "kernel_p20_ms",
    "kernel_p80_ms",
    "kernel_tflops",
    # first call per size: JIT compilation and, when autotuning, the search
    "first_call_s",
    "autotune_search_s",
    # tile configuration
    "autotune",
    "block_m",
    "block_n",
    "block_k",
    "num_warps",
    "num_stages",
    "config_source",
    "config_name",
    # roofline, tiles and waves (ledger.formulas)
    "flops",
    "min_bytes",
    "arithmetic_intensity",
    "machine",
    "peak_tflops",
    "roofline_time_ms",
    "roofline_tflops",
    "roofline_fraction",
    "tile_count",
    "blocks_per_sm_estimate",
    "waves",
    "last_wave_utilization",
    # environment
    *environment.COLUMNS,
    "backend",
    "timing_method",
    "note",
)


def _or_blank(value):
    return "" if value is None else value


def blocks_per_sm_estimate(config, machine):
    """Resident blocks per SM from the launch's tiles, warps and stages (ledger.formulas)."""
    if machine is None or not (config.blocks_known and config.launch_known):
        return None
    return (
        formulas.occupancy_estimate(
            config.block_m,
            config.block_n,
            config.block_k,
            config.num_warps,
            config.num_stages,
            DTYPE_BYTES,
            machine,
        )["blocks_per_sm"]
        or None
    )


def roofline_columns(m, n, k, median_ms, config, machine):
    row = {
        "flops": formulas.gemm_flops(m, n, k),
        "min_bytes": formulas.min_bytes(m, n, k, DTYPE_BYTES),
        "arithmetic_intensity": formulas.arithmetic_intensity(m, n, k, DTYPE_BYTES),
        "machine": machine.name if machine else "",
        "peak_tflops": machine.peak_tflops if machine else "",
        "roofline_time_ms": "",
        "roofline_tflops": "",
        "roofline_fraction": "",
        "tile_count": "",
        "blocks_per_sm_estimate": "",
        "waves": "",
        "last_wave_utilization": "",
    }
    if machine is not None:
        bound_ms = formulas.roofline_time_s(m, n, k, DTYPE_BYTES, machine) * 1e3
        row["roofline_time_ms"] = bound_ms
        row["roofline_tflops"] = formulas.roofline_tflops(m, n, k, DTYPE_BYTES, machine)
        if median_ms:
            row["roofline_fraction"] = bound_ms / median_ms
    if config.blocks_known:
        tiles = formulas.tile_count(m, n, config.block_m, config.block_n)
        row["tile_count"] = tiles
        per_sm = blocks_per_sm_estimate(config, machine)
        if per_sm:
            num_waves, last, _overall = formulas.waves(tiles, per_sm, machine.n_sm)
            row.update(blocks_per_sm_estimate=per_sm, waves=num_waves, last_wave_utilization=last)
    return row


def build_frame(
    results, env, *, submission, autotune, backend_name, run_id=None, submission_sha256=""
):
    """The run as a DataFrame with COLUMNS, one row per size.

    ``submission_sha256`` is the file's hash: the batch grader matches a handed-in
    CSV to the file it was measured on by it."""
    machine = formulas.machine_for_gpu_name(env.get("gpu_name") or "")
    run_id = run_id or new_run_id()
    rows = []
    for result in results:
        m, n, k = result.m, result.n, result.k
        flops = formulas.gemm_flops(m, n, k)
        nt, kernel, ref = result.ninetoothed, result.kernel, result.torch_mm
        config = result.config
        row = {
            "run_id": run_id,
            "size": size_label(m, n, k),
            "m": m,
            "n": n,
            "k": k,
            "implementation": IMPLEMENTATION,
            "submission": submission,
            "submission_sha256": submission_sha256,
            "verdict": result.verdict,
            "median_ms": nt.median_ms if nt else "",
            "p20_ms": nt.p20_ms if nt else "",
            "p80_ms": nt.p80_ms if nt else "",
            "tflops": _or_blank(tflops(flops, nt.median_ms)) if nt else "",
            "torch_mm_median_ms": ref.median_ms if ref else "",
            "torch_mm_p20_ms": ref.p20_ms if ref else "",
            "torch_mm_p80_ms": ref.p80_ms if ref else "",
            "torch_mm_tflops": _or_blank(tflops(flops, ref.median_ms)) if ref else "",
            "ratio_vs_torch_mm": ref.median_ms / nt.median_ms if nt and ref else "",
            "kernel_median_ms": kernel.median_ms if kernel else "",
            "kernel_p20_ms": kernel.p20_ms if kernel else "",
            "kernel_p80_ms": kernel.p80_ms if kernel else "",
            "kernel_tflops": _or_blank(tflops(flops, kernel.median_ms)) if kernel else "",
            "first_call_s": _or_blank(result.first_call_s),
            "autotune_search_s": _or_blank(result.autotune_search_s),
            "autotune": bool(autotune),
            "block_m": config.block_m,
            "block_n": config.block_n,
            "block_k": config.block_k,
            "num_warps": config.num_warps,
            "num_stages": config.num_stages,
            "config_source": config.source,
            "config_name": config.label(),
            **roofline_columns(m, n, k, nt.median_ms if nt else None, config, machine),
            **{column: env.get(column, "") for column in environment.COLUMNS},
            "backend": backend_name,
            "timing_method": METHOD if nt else "",
            "note": result.note,
        }
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def new_run_id():
    return uuid.uuid4().hex[:8]


def _slug(text):
    return re.sub(r"[^A-Za-z0-9.-]+", "-", str(text)).strip("-") or "x"


def run_stem(env, *, autotune, label="", run_id=None):
    """'ntgemm-bench_20261129T104455Z_host_autotune_label_1a2b3c4d': never the same twice."""
    stamp = env.get("timestamp") or datetime.datetime.now(datetime.timezone.utc).isoformat()
    try:
        when = datetime.datetime.fromisoformat(stamp).astimezone(datetime.timezone.utc)
        stamp = when.strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        stamp = _slug(stamp)
    host = _slug((env.get("host") or socket.gethostname()).split(".")[0])
    parts = ["ntgemm-bench", stamp, host, "autotune" if autotune else "fixed"]
    if label:
        parts.append(_slug(label))
    parts.append(run_id or new_run_id())
    return "_".join(parts)


def write_csv(frame, out_dir, stem):
    """Write ``frame`` to OUT_DIR/STEM.csv, never over an existing file; returns the path."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.csv"
    if path.exists():
        path = out_dir / f"{stem}-{uuid.uuid4().hex[:6]}.csv"
    frame.to_csv(path, index=False)
    return path


def read_csv(path):
    return pd.read_csv(path, keep_default_na=True)


def spread(row, prefix=""):
    """Half the p20..p80 width as a share of the median (benchmarks.timing) of a timed row:
    the kernel's, or torch.mm's with ``prefix="torch_mm_"``."""
    return Timing(*(row[f"{prefix}{name}_ms"] for name in ("median", "p20", "p80"))).relative_spread


# --- the printed table ----------------------------------------------------------------------


def _ms(value):
    return "-" if value is None else f"{value:.4f}"


def _rate(value):
    if value is None:
        return "-"
    return f"{value:.1f}" if value >= 10 else f"{value:.3f}" if value < 1 else f"{value:.2f}"


def table_rows(results, *, timed):
    rows = []
    for result in results:
        flops = formulas.gemm_flops(result.m, result.n, result.k)
        nt, ref, kernel = result.ninetoothed, result.torch_mm, result.kernel
        verdict = result.verdict
        row = [result.label]
        if timed:
            row += [
                _ms(nt.median_ms if nt else None),
                _ms(kernel.median_ms if kernel else None),
                _ms(ref.median_ms if ref else None),
                _rate(tflops(flops, nt.median_ms) if nt else None),
                _rate(tflops(flops, ref.median_ms) if ref else None),
                f"{ref.median_ms / nt.median_ms:.2f}x" if nt and ref else "-",
                result.config.label(),
            ]
        row.append(verdict)
        rows.append(row)
    return rows


def table_headers(*, timed):
    if not timed:
        return ["Size", "Result"]
    return [
        "Size",
        "NineToothed(ms)",
        "kernel only(ms)",
        "PyTorch(ms)",
        "NineToothed TFLOPS",
        "PyTorch TFLOPS",
        "vs torch.mm",
        "Blocks",
        "Result",
    ]


def format_table(headers, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(h).rjust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(c).rjust(w) for c, w in zip(row, widths)))
    return "\n".join(lines)


def why_text(frame, build=None):
    """The "why this speed" section for a run's timed rows (benchmarks.why_speed), with the
    cubin's registers and shared memory from the compile gate's ``build`` fields when given;
    empty when no row can be explained (no timed size, or a GPU the ledger does not model)."""
    from benchmarks import why_speed, why_speed_text

    rows = frame.where(frame.notna(), "").to_dict("records")
    return "\n".join(why_speed_text.markdown(why_speed.explain_rows(rows, build)))


def notes(results):
    """The FAIL and SKIP explanations, one block per size."""
    lines = []
    for result in results:
        if result.verdict != PASS or result.note:
            text = result.note.replace("\n", "\n      ")
            lines.append(f"  {result.label}: {result.verdict}: {text}")
    return "\n".join(lines)
