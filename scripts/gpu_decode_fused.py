#!/usr/bin/env python3
"""The decode step of scripts/gpu_decode_step.py with its layer compiled by torch.compile
(TorchInductor fuses the element-wise work, RMS norm with the residual add, RoPE, SiLU x up,
into a few Triton kernels, as a serving engine's hand-fused kernels do; the GEMMs stay
cuBLAS's and the attention SDPA's), replayed from a CUDA graph: what the op list's fused
element-wise ops (one kernel each, kernel_launch_us apiece) should be judged against.

Writes OUTDIR/decode_fused.csv (decode.csv's columns and compile_s: the first call's
seconds) and OUTDIR/decode_fused_kernels.csv.
Usage: python3 scripts/gpu_decode_fused.py OUTDIR
"""
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from gpu_decode_step import EPS, H, HEAD_DIM, HEADS, VOCAB, Weights, kv_cache, measure_step, rope, rope_tables
from gpu_microbench import write_csv  # scripts/: the CSV writer

POINTS = [(1, 1024), (16, 128), (64, 512)]


def layer(x, n1, n2, wqkv, wo, wgu, wdown, kc, vc, c, s, ctx: int):
    b = x.shape[0]
    h = F.rms_norm(x, (H,), n1, EPS)
    qkv = F.linear(h, wqkv).view(b, 3, HEADS, HEAD_DIM)
    qk = rope(qkv[:, :2], c, s)
    kc[:, :, ctx] = qk[:, 1]
    vc[:, :, ctx] = qkv[:, 2]
    a = F.scaled_dot_product_attention(qk[:, 0].unsqueeze(2), kc, vc)
    x = x + F.linear(a.reshape(b, H), wo)
    h = F.rms_norm(x, (H,), n2, EPS)
    g, u = F.linear(h, wgu).chunk(2, dim=-1)
    return x + F.linear(F.silu(g) * u, wdown)


compiled_layer = torch.compile(layer, dynamic=False)


def fused_point(w, b, ctx, cos, sin, kernel_rows):
    kc, vc = kv_cache(b, ctx)
    tok = torch.randint(0, VOCAB, (b,), device="cuda")
    c, s = cos[ctx], sin[ctx]

    def step():
        x = w.emb[tok]
        for i, l in enumerate(w.layers):
            x = compiled_layer(x, l["n1"], l["n2"], l["qkv"], l["o"], l["gu"], l["down"], kc[i], vc[i], c, s, ctx)
        return F.linear(F.rms_norm(x, (H,), w.norm_final, EPS), w.head).argmax(dim=-1)
    t0 = time.time()
    step()
    torch.cuda.synchronize()
    compile_s = time.time() - t0
    row = dict(measure_step(step, "bf16", b, ctx, kernel_rows), compile_s=compile_s)
    del kc, vc
    torch.cuda.empty_cache()
    return row


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    w = Weights()
    cos, sin = rope_tables(8192)
    rows, kernel_rows = [], []
    for b, ctx in POINTS:
        try:
            rows.append(fused_point(w, b, ctx, cos, sin, kernel_rows))
            print(rows[-1], flush=True)
        except Exception:
            traceback.print_exc()
        write_csv(os.path.join(out, "decode_fused.csv"), rows)
        write_csv(os.path.join(out, "decode_fused_kernels.csv"), kernel_rows)


if __name__ == "__main__":
    main()
