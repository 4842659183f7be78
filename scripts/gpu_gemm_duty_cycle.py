#!/usr/bin/env python3
"""How fast does a GEMM run inside a step, as a function of how much of the step is GEMMs?

The catalog's H100/H200 GEMM curve (OpenXLA's table) is a rate a cool GPU reaches; this
repo's back-to-back measurements (scenarios/validation/microbench/measured_2026-11-26/
gemm_fwd_h200.csv) run the large layer shapes 15-19% slower, while inside Hugging Face's
eager steps, where element-wise kernels sit between the GEMMs, the curve held within 7%.
The power limit reads an average: the more of the time the tensor cores are busy, the
lower the clock. This script measures that dependence; scripts/duty_cycle_to_catalog.py
fits the catalog's `power_limited_gemm` to it (sim/cost/power_limit.hpp).

For each shape, a sustained loop (SECONDS per point, the first second discarded) of
    GEMM, then a memory-bound filler (a copy of a buffer sized so the GEMM's share of the
    loop's device time is the target duty cycle)
with CUDA events around every GEMM and every filler. Writes OUTDIR/gemm_duty_cycle.csv:
shape, target and measured duty cycle, the GEMM's median TFLOP/s, the filler's GB/s, and
the SM clock and power nvidia-smi reads at the end of the point.

Options: --filler copy (HBM-bound, as a step's element-wise kernels), swiglu (PyTorch eager's
silu(gate) * up: a real layer's element-wise kernels) or sleep (a one-thread spin kernel: the
GPU idles, as while it waits on a collective or in a pipeline bubble);
--dtype bf16 or fp8 (e4m3 in, bf16 out); --duty and --shapes to pick points; --name for the
CSV's name (default gemm_duty_cycle.csv). Rows are appended per run as they come.

Usage: python3 scripts/gpu_gemm_duty_cycle.py OUTDIR [SECONDS] [--filler copy|swiglu|sleep]
           [--dtype bf16|fp8] [--duty 1,0.7,0.4] [--shapes 8192x28672x4096,...] [--name F.csv]
"""
import argparse
import os
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

from gpu_microbench import write_csv  # scripts/: one CSV writer for the GPU scripts

SHAPES = [(8192, 28672, 4096), (8192, 4096, 14336), (8192, 6144, 4096)]  # m, n, k: Llama-3-8B layers
DUTY = [1.0, 0.9, 0.8, 0.7, 0.55, 0.4]


def smi(query):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10).stdout
        return float(out.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return float("nan")


def timed(fn):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    return start, stop


def sustained_point(gemm, filler, seconds):
    """Runs GEMM + filler pairs for `seconds`; medians over the pairs after the first second."""
    pairs, began = [], time.time()
    while time.time() - began < seconds:
        pairs.append((time.time() - began, timed(gemm), timed(filler) if filler else None))
        if len(pairs) % 64 == 0:
            torch.cuda.synchronize()  # keep the queue short so the wall clock tracks the device
    torch.cuda.synchronize()
    gemm_s, fill_s = [], []
    for at, (g0, g1), fill in pairs:
        if at < 1.0:
            continue
        gemm_s.append(g0.elapsed_time(g1) / 1e3)
        fill_s.append(fill[0].elapsed_time(fill[1]) / 1e3 if fill else 0.0)
    return statistics.median(gemm_s), statistics.median(fill_s)


def make_gemm(m, n, k, dtype):
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    if dtype == "bf16":
        return lambda: F.linear(x, w)
    x8, w8 = x.to(torch.float8_e4m3fn), (w * 50).to(torch.float8_e4m3fn)  # e4m3: keep w in range
    one = torch.ones((), device="cuda")
    return lambda: torch._scaled_mm(x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def sleep_filler(want_s):
    """A one-thread spin kernel lasting about want_s: calibrated on this GPU's clock."""
    cycles = 1 << 20
    events = [timed(lambda: torch.cuda._sleep(cycles)) for _ in range(5)]
    torch.cuda.synchronize()
    per_cycle = statistics.median(e[0].elapsed_time(e[1]) / 1e3 for e in events) / cycles
    n = max(1000, int(want_s / per_cycle))
    return lambda: torch.cuda._sleep(n)


def memory_filler(kind, want_s):
    """A memory-bound kernel lasting about want_s, and the bytes it moves."""
    def make(elements):
        if kind == "copy":
            src = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
            dst = torch.empty_like(src)
            return (lambda: dst.copy_(src)), 4 * elements  # bf16 read + write
        gate = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
        up = torch.randn_like(gate)
        return (lambda: F.silu(gate) * up), 6 * elements  # two reads, one write (eager: two kernels)
    probe, probe_bytes = make(64 << 20)
    events = [timed(probe) for _ in range(20)]
    torch.cuda.synchronize()
    rate = probe_bytes / statistics.median(e[0].elapsed_time(e[1]) / 1e3 for e in events)
    per_element = probe_bytes / (64 << 20)
    del probe
    return make(max(1 << 16, int(want_s * rate / per_element)))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("seconds", nargs="?", type=float, default=4.0)
    ap.add_argument("--filler", choices=["copy", "sleep", "swiglu"], default="copy")
    ap.add_argument("--dtype", choices=["bf16", "fp8"], default="bf16")
    ap.add_argument("--duty", default=",".join(str(d) for d in DUTY))
    ap.add_argument("--shapes", default=",".join(f"{m}x{n}x{k}" for m, n, k in SHAPES))
    ap.add_argument("--name", default="gemm_duty_cycle.csv")
    a = ap.parse_args()
    a.duty = [float(d) for d in a.duty.split(",")]
    a.shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    return a


def main():
    a = parse_args()
    out, seconds = a.out, a.seconds
    os.makedirs(out, exist_ok=True)
    rows = []
    for m, n, k in a.shapes:
        gemm = make_gemm(m, n, k, a.dtype)
        gemm_alone, _ = sustained_point(gemm, None, 1.5)
        for duty in a.duty:
            filler, moved_bytes = None, 0
            if duty < 1.0 and a.filler == "sleep":
                filler = sleep_filler(gemm_alone * (1 - duty) / duty)
            elif duty < 1.0:
                # a memory-bound kernel sized from the GEMM's own time and the kernel's rate
                # measured here, so the GEMM takes `duty` of each pair: a copy (reads and writes
                # its buffer) or SwiGLU's silu(gate) * up (reads two, writes one)
                filler, moved_bytes = memory_filler(a.filler, gemm_alone * (1 - duty) / duty)
            t_gemm, t_fill = sustained_point(gemm, filler, seconds)
            row = dict(dtype=a.dtype, filler=a.filler if duty < 1.0 else "none", m=m, n=n, k=k,
                       duty_target=duty, duty_measured=round(t_gemm / (t_gemm + t_fill), 3),
                       gemm_s=t_gemm, gemm_tflops=round(2 * m * n * k / t_gemm / 1e12, 1),
                       filler_gbps=round(moved_bytes / t_fill / 1e9, 1) if t_fill else 0,
                       sm_clock_mhz=smi("clocks.sm"), power_w=smi("power.draw"))
            rows.append(row)
            print(row, flush=True)
            filler = None
        del gemm
        torch.cuda.empty_cache()
        write_csv(os.path.join(out, a.name), rows)


if __name__ == "__main__":
    main()
