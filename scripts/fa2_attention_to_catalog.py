#!/usr/bin/env python3
"""Turn FlashAttention-2's measured forward+backward rates into a GPU's attention_efficiency_by_seq.

Input: scenarios/validation/microbench/attention_fa2_{a100,h100}_fwdbwd_flashattention_repo.csv,
the numbers printed on the FlashAttention-2 benchmark charts (Dao-AILab/flash-attention README,
"Performance", commit 0251105a; the FlashAttention-2 paper, Dao 2023): fp16/bf16, hidden 2048
(32 heads of 64 or 16 of 128), batch 16384 / seqlen, forward plus backward TFLOP/s, FA's
convention (causal runs count half the rectangle; the backward 2.5 forwards).

twinsim counts attention over the full rectangle, the backward as two forwards, so for one
causal forward+backward of F full-rectangle forward FLOPs FA's rate T means a time of
1.75 F / T, and the one efficiency e that gives that time with twinsim's 3 F FLOPs is
e = 3 T / (1.75 peak), for both passes (the measurement does not split them; their sum is
what a training step runs). e can exceed 1: the causal kernel skips the masked half.

Output: YAML for the GPU file, from the FIT rows only: causal FlashAttention-2 rows at every
other sequence length (512, 2k, 8k); 1k, 4k and 16k are held out and judged by
tests/unit/validation/attention_curves_test.cpp.

    scripts/fa2_attention_to_catalog.py --gpu A100-SXM4-80GB --peak-tflops 312

--implementation flashattention_v1 --kernel flash1 writes the same fit of another row of the
same chart (FlashAttention 1.x, the CUDA kernel of flash-attn 1.0) as that kernel's entry of
attention_kernel_efficiency_by_seq (stack.attention_kernel: flash1):

    scripts/fa2_attention_to_catalog.py --gpu A100-SXM4-80GB --peak-tflops 312 \
        --implementation flashattention_v1 --kernel flash1
"""
import argparse
import csv
from collections import defaultdict
from pathlib import Path

MICROBENCH = Path(__file__).resolve().parent.parent / "scenarios/validation/microbench"
FILES = {"A100": "attention_fa2_a100_fwdbwd_flashattention_repo.csv",
         "H100": "attention_fa2_h100_fwdbwd_flashattention_repo.csv"}
FIT_SEQ = (512, 2048, 8192)


def efficiency(tflops, peak):
    return 3.0 * tflops / (1.75 * peak)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", required=True, help="gpu column prefix: A100-SXM4-80GB or H100-SXM5-80GB")
    ap.add_argument("--peak-tflops", type=float, required=True, help="dense fp16/bf16 peak")
    ap.add_argument("--implementation", default="flashattention2", help="the CSV's implementation column")
    ap.add_argument("--kernel", default="", help="attention_kernel_efficiency_by_seq entry (empty: flash2's own key)")
    args = ap.parse_args()
    path = MICROBENCH / FILES[args.gpu[:4]]
    points = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if (r["gpu"].startswith(args.gpu) and r["implementation"] == args.implementation and r["causal"] == "1"
                    and r["tflops"] and int(r["seqlen"]) in FIT_SEQ):
                points[int(r["head_dim"])].append((int(r["seqlen"]), efficiency(float(r["tflops"]), args.peak_tflops)))
    indent = "    " if args.kernel else "  "
    print(f"attention_kernel_efficiency_by_seq:\n  {args.kernel}:" if args.kernel else "attention_efficiency_by_seq:")
    for head_dim in sorted(points):
        curve = ", ".join(f"[{s}, {e:.4f}]" for s, e in sorted(points[head_dim]))
        print(f"{indent}{head_dim}: {{fwd: [{curve}], bwd: [{curve}]}}")


if __name__ == "__main__":
    main()
