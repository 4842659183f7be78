#!/usr/bin/env python3
"""How fast does a GEMM run inside a step, as a function of how much of the step is GEMMs?

The catalog's H100/H200 GEMM curve (OpenXLA's table) is a rate a cool GPU reaches; this
repo's back-to-back measurements (scenarios/validation/microbench/measured_2026-11-26/
gemm_fwd_h200.csv) run the large layer shapes 15-19% slower, while inside Hugging Face's
eager steps, where element-wise kernels sit between the GEMMs, the curve held within 7%.
The power limit reads an average: the more of the time the tensor cores are busy, the
lower the clock. This script measures that dependence so the catalog can model it.

For each shape, a sustained loop (SECONDS per point, the first second discarded) of
    GEMM, then a memory-bound filler (a copy of a buffer sized so the GEMM's share of the
    loop's device time is the target duty cycle)
with CUDA events around every GEMM and every filler. Writes OUTDIR/gemm_duty_cycle.csv:
shape, target and measured duty cycle, the GEMM's median TFLOP/s, the filler's GB/s, and
the SM clock and power nvidia-smi reads at the end of the point.

Usage: python3 scripts/gpu_gemm_duty_cycle.py OUTDIR [SECONDS]   (default 4 s per point)
"""
import os
import statistics
import subprocess
import sys
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


def main():
    out = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    os.makedirs(out, exist_ok=True)
    rows = []
    for m, n, k in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
        gemm = lambda: F.linear(x, w)
        gemm_alone, _ = sustained_point(gemm, None, 1.5)
        for duty in DUTY:
            filler, moved_bytes = None, 0
            if duty < 1.0:
                # a copy reads and writes its buffer: sized from the GEMM's own time and the
                # copy rate measured here, so the GEMM takes `duty` of each pair
                src = torch.randn(64 << 20, device="cuda", dtype=torch.bfloat16)
                dst = torch.empty_like(src)
                events = [timed(lambda: dst.copy_(src)) for _ in range(20)]
                torch.cuda.synchronize()
                rate = 2 * src.numel() * 2 / statistics.median(e[0].elapsed_time(e[1]) / 1e3 for e in events)
                want_s = gemm_alone * (1 - duty) / duty
                elements = max(1 << 16, int(want_s * rate / 4))
                src = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
                dst = torch.empty_like(src)
                moved_bytes = 2 * src.numel() * 2
                filler = lambda: dst.copy_(src)
            t_gemm, t_fill = sustained_point(gemm, filler, seconds)
            row = dict(m=m, n=n, k=k, duty_target=duty, duty_measured=round(t_gemm / (t_gemm + t_fill), 3),
                       gemm_s=t_gemm, gemm_tflops=round(2 * m * n * k / t_gemm / 1e12, 1),
                       filler_gbps=round(moved_bytes / t_fill / 1e9, 1) if t_fill else 0,
                       sm_clock_mhz=smi("clocks.sm"), power_w=smi("power.draw"))
            rows.append(row)
            print(row, flush=True)
            if duty < 1.0:
                del src, dst
        del x, w
        torch.cuda.empty_cache()
    write_csv(os.path.join(out, "gemm_duty_cycle.csv"), rows)


if __name__ == "__main__":
    main()
