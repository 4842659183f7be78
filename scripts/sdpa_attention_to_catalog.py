#!/usr/bin/env python3
"""Turn the causal attention rates measured by scripts/gpu_microbench.py (attention.csv:
PyTorch's scaled_dot_product_attention, one backend) into a GPU's
attention_kernel_efficiency_by_seq entry.

twinsim counts a flash kernel's forward as the full rectangle's F = 4 b h s^2 d FLOPs and
its backward as 2 F, whatever the mask (a causal kernel skips the masked half, so its
efficiency may exceed 1). From a measured forward time t_f and forward+backward time t:
fwd efficiency F / (t_f peak), bwd efficiency 2 F / ((t - t_f) peak).

Output: YAML for the GPU file from the FIT rows only: causal rows at every other sequence
length (512, 2k, 8k); 1k, 4k and 16k are held out and judged by
tests/unit/validation/attention_curves_test.cpp. With --long (gpu_attention_long.py's
attention_long.csv: one sequence of 32 heads, 8k-128k tokens) its 32k and 128k rows extend
the curves of their head width past 8k (16k and 64k held out), where long-context runs live.
With --noncausal the rows without the causal mask (attention.csv's causal 0: the same batch x
sequence = 16k tokens) give attention_kernel_noncausal_efficiency_by_seq instead (a non-causal
kernel computes the whole rectangle, so its efficiency is its fraction of the peak), the same rows
fitted and held out; the long rows are causal only.

    scripts/sdpa_attention_to_catalog.py scenarios/validation/microbench/measured_2026-11-26/h100/attention.csv \\
        --backend cudnn --peak-tflops 989 --long scenarios/validation/microbench/measured_2026-11-26/h100/attention_long.csv
"""
import argparse
import csv
from collections import defaultdict

FIT_SEQ = (512, 2048, 8192)
FIT_LONG_SEQ = (32768, 131072)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--backend", required=True, help="attention.csv's backend column: flash or cudnn")
    ap.add_argument("--kernel", default="cudnn", help="the catalog's name for the kernel")
    ap.add_argument("--peak-tflops", type=float, required=True, help="dense fp16/bf16 peak")
    ap.add_argument("--long", help="attention_long.csv: its 32k and 128k rows extend the curves")
    ap.add_argument("--noncausal", action="store_true", help="the rows without the causal mask")
    args = ap.parse_args()
    peak = args.peak_tflops * 1e12
    fwd, bwd = defaultdict(list), defaultdict(list)
    causal = "0" if args.noncausal else "1"
    for path, fit in ((args.csv, FIT_SEQ), (args.long, FIT_LONG_SEQ)):
        if not path:
            continue
        for r in csv.DictReader(open(path)):
            if r["backend"] != args.backend or r["causal"] != causal or int(r["seq"]) not in fit:
                continue
            b, h, s, d = (int(r[k]) for k in ("batch", "heads", "seq", "head_dim"))
            f = 4.0 * b * h * s * s * d
            t_f, t = float(r["fwd_s"]), float(r["fwd_bwd_s"])
            fwd[d].append((s, f / (t_f * peak)))
            bwd[d].append((s, 2 * f / ((t - t_f) * peak)))
    key = "attention_kernel_noncausal_efficiency_by_seq" if args.noncausal else "attention_kernel_efficiency_by_seq"
    print(f"{key}:\n  {args.kernel}:")
    for d in sorted(fwd):
        curve = lambda pts: "[" + ", ".join(f"[{s}, {e:.4f}]" for s, e in sorted(pts)) + "]"
        print(f"    {d}: {{fwd: {curve(fwd[d])}, bwd: {curve(bwd[d])}}}")


if __name__ == "__main__":
    main()
