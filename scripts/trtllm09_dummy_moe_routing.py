#!/usr/bin/env python3
"""Which experts a TensorRT-LLM 0.9 Mixtral engine built without weights routes to.

The v0.9.0 performance page (docs/source/performance.md) builds its engines from a config
alone (`trtllm-build --model_config ...`, no checkpoint), so every weight is drawn by
`Parameter.xavier_init` (tensorrt_llm/parameter.py, NVIDIA/TensorRT-LLM #1455 = 71d8d4d3):

    value = (torch.randn(shape) * 2 - 1) * v_range
    v_range = sqrt(6) / sqrt(shape[0] + shape[1])   for a 2-D weight, 0.1 otherwise

a normal of mean -v_range and standard deviation 2 v_range, not the uniform U[-v, v] its
comment names. Every matrix then has a mean part -v_range x (all ones), which maps any input
with a non-zero sum onto the all-ones direction, sqrt(d)/2 times more strongly than its
random part maps it anywhere else. The residual stream of every token ends up on that one
direction, so the router (a [8, 4096] fp32 RowLinear, tensorrt_llm/layers/moe.py) gives every
token the same ranking of experts: a decode step reads the weights of the few experts that
ranking picks, not of every expert a real router's spread of tokens would touch. Where an
fp16 activation overflows, the residual turns inf, its RMS norm NaN, and the top-k kernel
(topkGatingSoftmax, cpp/tensorrt_llm/kernels/mixtureOfExperts/moe_kernels.cu) sends every
token to expert 0: one expert a layer.

This script runs that forward pass for a batch of random prompts (gptSessionBenchmark's
`rand() % vocab` ids), Mixtral 8x7B's shapes at TP 2 (each rank its own draws, as the
sequential per-rank build makes them; row-parallel outputs summed), weights drawn as above in
fp16, GEMM outputs rounded to fp16 (so overflow turns to inf as on the GPU), norms and the
router in fp32. It prints, layer by layer, how many distinct experts each rank's router picks
for the batch, against the E(1 - (1 - k/E)^T) that uniform routing gives.
Only the experts some token picks are drawn (the others' values never matter).

Usage: scripts/trtllm09_dummy_moe_routing.py [--prompts 8] [--prompt-len 8] [--layers 32]
Needs numpy; ~1 GB of memory; minutes of CPU.
"""
import argparse
import math

import numpy as np

HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 4096, 14336, 32, 32, 8, 128
EXPERTS, TOP_K, VOCAB, ROPE_THETA, EPS = 8, 2, 32000, 1e6, 1e-5
TP = 2
FP16_MAX = 65504.0


def xavier(rng, shape):
    """tensorrt_llm Parameter.xavier_init for a float weight (fp16 engine)."""
    v_range = math.sqrt(6) / math.sqrt(shape[0] + shape[1]) if len(shape) == 2 else 0.1
    return ((rng.standard_normal(shape, dtype=np.float32) * 2 - 1) * v_range).astype(np.float16)


def fp16(x):
    """A GEMM or elementwise output stored in fp16: beyond its range it is inf."""
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)


def rms_norm(x, gamma):
    with np.errstate(over="ignore", invalid="ignore"):
        return fp16(x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * gamma.astype(np.float32))


def rope(x, positions):
    half = HEAD_DIM // 2
    inv = ROPE_THETA ** (-np.arange(half, dtype=np.float32) / half)
    ang = positions[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def attention(rng, h, prompts, prompt_len):
    """One rank's share: 16 query heads, 4 KV heads; returns its o-proj partial sum."""
    q_heads, kv_heads = HEADS // TP, KV_HEADS // TP
    qkv_w = xavier(rng, ((q_heads + 2 * kv_heads) * HEAD_DIM, HIDDEN))
    o_w = xavier(rng, (HIDDEN, q_heads * HEAD_DIM))
    qkv = fp16(h @ qkv_w.T.astype(np.float32))
    t = h.shape[0]
    q = qkv[:, : q_heads * HEAD_DIM].reshape(t, q_heads, HEAD_DIM)
    k = qkv[:, q_heads * HEAD_DIM : (q_heads + kv_heads) * HEAD_DIM].reshape(t, kv_heads, HEAD_DIM)
    v = qkv[:, (q_heads + kv_heads) * HEAD_DIM :].reshape(t, kv_heads, HEAD_DIM)
    pos = np.tile(np.arange(prompt_len, dtype=np.float32), prompts)
    q, k = rope(q, pos), rope(k, pos)
    out = np.zeros((t, q_heads, HEAD_DIM), dtype=np.float32)
    mask = np.triu(np.full((prompt_len, prompt_len), -np.inf, dtype=np.float32), 1)
    group = q_heads // kv_heads
    with np.errstate(over="ignore", invalid="ignore"):
        for p in range(prompts):
            rows = slice(p * prompt_len, (p + 1) * prompt_len)
            for head in range(q_heads):
                s = q[rows, head] @ k[rows, head // group].T / math.sqrt(HEAD_DIM) + mask
                s = np.exp(s - np.max(s, axis=-1, keepdims=True))
                out[rows, head] = (s / s.sum(-1, keepdims=True)) @ v[rows, head // group]
    return fp16(fp16(out.reshape(t, -1)) @ o_w.T.astype(np.float32))


def top_k_experts(logits):
    """topkGatingSoftmax's picks. On a NaN row no `val > max_val` holds: every pass keeps
    expert 0 (the -10000 it writes over its pick is no larger than NaN either), so the
    token sends both its rows to expert 0."""
    picks = np.argsort(-logits, axis=-1, kind="stable")[:, :TOP_K]
    picks[np.isnan(logits).any(axis=-1)] = 0
    return picks


def moe(rng, h):
    """One rank's share of the experts (TP mode: every expert, FFN/TP wide) and its picks."""
    router = xavier(rng, (EXPERTS, HIDDEN)).astype(np.float32)  # fp32 RowLinear, not split
    with np.errstate(over="ignore", invalid="ignore"):
        picks = top_k_experts(h @ router.T)
    ffn = FFN // TP
    out = np.zeros_like(h)
    for e in np.unique(picks):
        rows = np.nonzero((picks == e).any(axis=-1))[0]
        w1 = xavier(rng, (1, 2 * ffn, HIDDEN))[0].astype(np.float32)  # 3-D: v_range 0.1
        w2 = xavier(rng, (1, HIDDEN, ffn))[0].astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            up_gate = fp16(h[rows] @ w1.T)
            act = fp16(up_gate[:, :ffn] * (up_gate[:, ffn:] / (1 + np.exp(-up_gate[:, ffn:]))))
            out[rows] += fp16(act @ w2.T) / TOP_K  # the routing weights' sum is 1
    return out, picks


def run(prompts, prompt_len, layers, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, size=prompts * prompt_len)
    residual = []
    for _ in range(TP):  # each rank's own embedding table (replicated, drawn per rank)
        table = xavier(rng, (VOCAB, HIDDEN))
        residual.append(table[ids].astype(np.float32))
    t = prompts * prompt_len
    uniform = EXPERTS * (1 - (1 - TOP_K / EXPERTS) ** t)
    print(f"{t} tokens ({prompts} prompts x {prompt_len}); "
          f"uniform routing would touch {uniform:.2f} of {EXPERTS}")
    print("layer  rank0 experts  rank1 experts  non-finite residual share")
    for layer in range(layers):
        normed = [rms_norm(residual[r], xavier(rng, (HIDDEN,))) for r in range(TP)]
        partial = [attention(rng, normed[r], prompts, prompt_len) for r in range(TP)]
        total = fp16(sum(partial))  # the all-reduce
        residual = [fp16(residual[r] + total) for r in range(TP)]
        outs, touched = [], []
        for r in range(TP):
            out, picks = moe(rng, rms_norm(residual[r], xavier(rng, (HIDDEN,))))
            outs.append(out)
            touched.append(sorted(int(e) for e in np.unique(picks)))
        total = fp16(sum(outs))
        residual = [fp16(residual[r] + total) for r in range(TP)]
        bad = float(np.mean(~np.isfinite(residual[0])))
        print(f"{layer:5d}  {str(touched[0]):13s}  {str(touched[1]):13s}  {bad:.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=8)
    ap.add_argument("--layers", type=int, default=LAYERS)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    run(a.prompts, a.prompt_len, a.layers, a.seed)


if __name__ == "__main__":
    main()
