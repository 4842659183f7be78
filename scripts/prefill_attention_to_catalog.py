#!/usr/bin/env python3
"""Fits a serving engine's measured causal prefill attention (GpuSpec::prefill_attention_by_heads).

Reads scenarios/validation/microbench/prefill_attention_aiconfigurator_h100_h200.csv
(ai-dynamo/aiconfigurator@095f58a5, context_attention_perf.parquet of vLLM 0.14.0 and SGLang
0.5.6.post2) and prints, for one GPU and engine, the catalog's curves: efficiency against the
full rectangle's FLOPs (4 x batch x isl^2 x heads x head_dim / latency / peak), keyed by the
(query head, prompt) pairs of the call (heads x batch) and then by the prompt length.
Fitted on batch 1 and 4 at isl 1k, 2k, 4k, 8k, 16k; every other row is held out and priced as
the simulator prices it (log-x interpolation in length, then in head-prompt pairs, ends held),
and the held-out latency errors are printed.

  scripts/prefill_attention_to_catalog.py --gpu h200 --engine vllm --peak-tflops 989
"""
import argparse
import bisect
import csv
import math
import os
import statistics

CSV = os.path.join(os.path.dirname(__file__), "..", "scenarios", "validation", "microbench",
                   "prefill_attention_aiconfigurator_h100_h200.csv")
FIT_BATCHES = {1, 4}
FIT_LENGTHS = {1024, 2048, 4096, 8192, 16384}


def interpolate_log_x(points, x):
    """hardware/gpu_spec.cpp interpolate_efficiency: linear in log x, the ends held."""
    xs = [p[0] for p in points]
    if x <= xs[0]:
        return points[0][1]
    if x >= xs[-1]:
        return points[-1][1]
    i = bisect.bisect_right(xs, x)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return y0 + t * (y1 - y0)


def price(curves, pairs, length):
    """The rate at `length` of each measured pair count, then at `pairs` between them."""
    return interpolate_log_x([(k, interpolate_log_x(c, length)) for k, c in sorted(curves.items())], pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--peak-tflops", type=float, default=989)
    a = ap.parse_args()
    rows = []
    with open(CSV) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["gpu"] != a.gpu or r["engine"] != a.engine:
                continue
            b, isl, h, d = int(r["batch"]), int(r["isl"]), int(r["heads"]), int(r["head_dim"])
            # the full rectangle's FLOPs: QK^T and PV, 2 x 2 x isl^2 x heads x head_dim a prompt
            eff = 4.0 * b * isl * isl * h * d / (float(r["latency_ms"]) * 1e-3) / (a.peak_tflops * 1e12)
            rows.append((b, isl, h, eff))
    curves = {}
    for b, isl, h, eff in rows:
        if b in FIT_BATCHES and isl in FIT_LENGTHS:
            curves.setdefault(b * h, []).append((isl, round(eff, 4)))
    for k in curves:
        curves[k].sort()
    for k, c in sorted(curves.items()):
        print(f"      {k}: [{', '.join(f'[{x}, {y}]' for x, y in c)}]")
    errors = []
    for b, isl, h, eff in rows:
        if b in FIT_BATCHES and isl in FIT_LENGTHS:
            continue
        errors.append(eff / price(curves, b * h, isl) - 1)  # predicted latency / measured - 1
    absolute = sorted(abs(e) for e in errors)
    print(f"# held out {len(errors)} rows: median |error| {100 * statistics.median(absolute):.1f}%, "
          f"p90 {100 * absolute[int(0.9 * len(absolute))]:.1f}%, max {100 * absolute[-1]:.1f}%")


if __name__ == "__main__":
    main()
