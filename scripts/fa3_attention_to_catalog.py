#!/usr/bin/env python3
"""Turn FlashAttention-3's published H100 rates into a GPU's
attention_kernel_efficiency_by_seq.flash3 entry.

Sources (both in scenarios/validation/microbench/, FlashAttention's benchmark shape: hidden
2048 as heads x head width, batch x sequence = 16k tokens, fp16):
  attention_fa3_h100_fwd_flashattention_repo.csv  forward, causal and not (the repo's
      assets/flash3_fp16_fwd.png, the FA3 paper's forward figure)
  attention_fa3_paper_h100_bwd.csv                backward, not causal (the FA3 paper's
      backward figure, Shah et al. 2024, arXiv 2407.08608: head width 64 and 128 only)

FlashAttention counts a forward as F = 4 b h s^2 d FLOPs, half of it under a causal mask,
and a backward as 2.5 forwards. twinsim counts a forward as the full rectangle's F and a
backward as 2 F whatever the mask (a causal kernel skips the masked half, so its
efficiency may exceed 1). For a published rate r (TFLOP/s):
  causal forward   efficiency = 2 r / peak
  causal backward  efficiency = 1.6 r / peak    (2 F over 2.5 F/2 / r)
The paper has no causal backward: it is taken as the non-causal one times the forward's
causal / non-causal ratio at the same sequence and head width (the masked diagonal blocks
and the shorter rows cost a backward what they cost a forward). cuDNN's rates check the
rule: its causal backward measured in this repo (measured_2026-11-26/h100/attention.csv)
over its non-causal one in the paper is 0.55 / 0.83 / 0.97 at 512 / 2k / 8k (hd128),
FlashAttention-3's forward ratio there 0.63 / 0.83 / 0.93.

Output: YAML for the GPU file from the FIT rows only (512, 2k, 8k and 16k); 1k and 4k are
held out and judged by tests/unit/validation/attention_curves_test.cpp. 16k, the figures'
longest, is fit because the curve holds its last point beyond it, where long-context runs
live: a kernel keeps its rate there (cuDNN's, measured from 8k to 128k in this repo,
measured_2026-11-26/h100/attention_long.csv: forward+backward within 5% of its 16k rate up
to 128k), so the
longest measured point is the best value to hold. (Held out before, 16k came out 2.5-3.1%
faster than the 8k point the curve then held.)

    scripts/fa3_attention_to_catalog.py --peak-tflops 989
"""
import argparse
import csv
import os

FIT_SEQ = (512, 2048, 8192, 16384)
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "validation", "microbench")


def rates(path, implementation):
    """{(causal, head_dim, seq): TFLOP/s} of one implementation's rows."""
    out = {}
    for r in csv.DictReader(open(path)):
        if r["implementation"] == implementation and r["tflops"]:
            out[(r["causal"] == "1", int(r["head_dim"]), int(r["seqlen"]))] = float(r["tflops"])
    return out


def flash3_curves(peak_tflops, folder=HERE):
    """{head_dim: (fwd points, bwd points)}, each [(seq, efficiency)] at FIT_SEQ."""
    fwd = rates(os.path.join(folder, "attention_fa3_h100_fwd_flashattention_repo.csv"), "flashattention3")
    bwd = rates(os.path.join(folder, "attention_fa3_paper_h100_bwd.csv"), "flashattention3")
    out = {}
    for d in sorted({hd for (_, hd, _) in bwd}):
        f_pts, b_pts = [], []
        for s in FIT_SEQ:
            causal_fwd, plain_fwd, plain_bwd = fwd[(True, d, s)], fwd[(False, d, s)], bwd[(False, d, s)]
            causal_bwd = plain_bwd * causal_fwd / plain_fwd
            f_pts.append((s, 2 * causal_fwd / peak_tflops))
            b_pts.append((s, 1.6 * causal_bwd / peak_tflops))
        out[d] = (f_pts, b_pts)
    return out


def curve_yaml(pts):
    return "[" + ", ".join(f"[{s}, {e:.4f}]" for s, e in pts) + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peak-tflops", type=float, required=True, help="dense fp16/bf16 peak")
    ap.add_argument("--dir", default=HERE, help="folder of the two CSV files")
    args = ap.parse_args()
    print("attention_kernel_efficiency_by_seq:\n  flash3:")
    for d, (f_pts, b_pts) in flash3_curves(args.peak_tflops, args.dir).items():
        print(f"    {d}: {{fwd: {curve_yaml(f_pts)}, bwd: {curve_yaml(b_pts)}}}")


if __name__ == "__main__":
    main()
