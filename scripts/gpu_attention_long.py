#!/usr/bin/env python3
"""Attention at long context: where the catalog's attention curves end (8k-16k tokens) and
long-context training runs begin (32k-256k). Causal scaled_dot_product_attention, bf16,
head width 128, one sequence of 32 query heads (Llama-3 8B's), K and V expanded to the
query heads (grouped-query attention's FLOPs are the same), forward and forward+backward,
per backend (PyTorch's flash = FlashAttention-2, cuDNN's), timed as gpu_microbench.py's
attention.csv (CUDA-event medians after warm-up, back to back).

Writes OUTDIR/attention_long.csv in attention.csv's columns, so the same readers
(scripts/sdpa_attention_to_catalog.py) take it.
Usage: python3 scripts/gpu_attention_long.py OUTDIR [--max-seq N]
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpu_microbench import median_seconds, write_csv


def rows(seqs, heads=32, d=128):
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    for name, backend in backends.items():
        for s in seqs:
            q, k, v = (torch.randn(1, heads, s, d, device="cuda", dtype=torch.bfloat16,
                                   requires_grad=True) for _ in range(3))
            g = torch.randn(1, heads, s, d, device="cuda", dtype=torch.bfloat16)
            flops = 4 * heads * s * s * d / 2  # FlashAttention papers' count, causal: half

            def fwd():
                with torch.no_grad():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fwd_bwd():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                torch.autograd.grad(o, (q, k, v), g)

            try:
                with sdpa_kernel(backend):
                    t_fwd = median_seconds(fwd, min_total_s=0.5, max_reps=10)
                    t_all = median_seconds(fwd_bwd, min_total_s=0.5, max_reps=10)
            except RuntimeError as e:
                print(f"attention {name} s={s}: {str(e).splitlines()[0]}", flush=True)
                continue
            print(f"{name} s={s}: fwd {flops / t_fwd / 1e12:.0f} TFLOP/s, "
                  f"fwd+bwd {3.5 * flops / t_all / 1e12:.0f}", flush=True)
            yield dict(backend=name, batch=1, heads=heads, seq=s, head_dim=d, causal=1,
                       fwd_s=t_fwd, fwd_bwd_s=t_all, fwd_flops=flops)
            del q, k, v, g
            torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--max-seq", type=int, default=131072)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seqs = [s for s in (8192, 16384, 32768, 65536, 131072) if s <= args.max_seq]
    write_csv(os.path.join(args.out, "attention_long.csv"), rows(seqs))


if __name__ == "__main__":
    main()
