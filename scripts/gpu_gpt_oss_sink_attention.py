#!/usr/bin/env python3
"""gpt-oss's attention as Megatron-core hands it to Transformer Engine, with and without its
learnable sinks, on one GPU: does the sink cost the fused kernel anything (issue 53)?

gpt-oss-120B (Megatron-Bridge gpt_oss_bridge.py): 64 query heads over 8 KV heads, head width 64,
softmax_type "learnable" (one logit a head), window_size (127, 0) on every other layer, causal.
Transformer Engine runs the sink fused on cuDNN >= 9.13.1 (TransformerEngine PR #2148) and falls
back to UnfusedDotProductAttention below it (issue #2318). twinsim prices the fused sink as the
vanilla kernel (the sink adds a logit a head forward and a per-head reduction of the rows'
statistics backward); tests/unit/validation/gpt_oss_sink_attention_test.cpp shows the published
run could not have held the unfused path's probabilities.

For the windowed and the full layer, at --seq tokens (4k, 8k) and batch 1: forward and
forward+backward seconds of TE's DotProductAttention, vanilla and learnable, the backend TE picked
(NVTE_DEBUG), and the peak memory of one forward+backward. Writes OUTDIR/gpt_oss_sink_attention.csv.
Usage: python3 scripts/gpu_gpt_oss_sink_attention.py OUTDIR [--seq 4096 8192]
Needs transformer_engine (>= 2.8) and cuDNN >= 9.13.1 for the fused sink.
Not yet run on a GPU (written on a machine without torch): expect to fix small things there.
"""
import argparse
import os

import torch

from gpu_microbench import median_seconds, write_csv

HEADS, KV_HEADS, HEAD_DIM = 64, 8, 64


def attention(softmax_type, window):
    from transformer_engine.pytorch.attention import DotProductAttention

    kwargs = dict(num_attention_heads=HEADS, kv_channels=HEAD_DIM, num_gqa_groups=KV_HEADS,
                  attention_dropout=0.0, attn_mask_type="causal", qkv_format="sbhd")
    if window is not None:
        kwargs["window_size"] = window
    if softmax_type != "vanilla":
        kwargs["softmax_type"] = softmax_type
    return DotProductAttention(**kwargs).cuda().to(torch.bfloat16)


def inputs(seq):
    def t(heads):
        return torch.randn(seq, 1, heads, HEAD_DIM, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    return t(HEADS), t(KV_HEADS), t(KV_HEADS)


def row(seq, softmax_type, window):
    dpa = attention(softmax_type, window)
    q, k, v = inputs(seq)
    grad = torch.randn(seq, 1, HEADS * HEAD_DIM, device="cuda", dtype=torch.bfloat16)

    def fwd():
        with torch.no_grad():
            dpa(q, k, v)

    def fwd_bwd():
        dpa(q, k, v).backward(grad)

    torch.cuda.reset_peak_memory_stats()
    fwd_bwd()
    peak = torch.cuda.max_memory_allocated()
    return {"seq": seq, "softmax_type": softmax_type, "window": window[0] if window else -1,
            "fwd_s": median_seconds(fwd), "fwd_bwd_s": median_seconds(fwd_bwd), "peak_bytes": peak,
            "cudnn": torch.backends.cudnn.version()}


def rows(seqs):
    for seq in seqs:
        for window in ((127, 0), None):
            for softmax_type in ("vanilla", "learnable"):
                try:
                    yield row(seq, softmax_type, window)
                except Exception as e:  # a backend that refuses the case: recorded, not fatal
                    print(f"seq {seq} window {window} {softmax_type}: {e}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--seq", type=int, nargs="+", default=[4096, 8192])
    a = p.parse_args()
    os.environ.setdefault("NVTE_DEBUG", "1")  # TE prints the backend it selects
    os.environ.setdefault("NVTE_DEBUG_LEVEL", "2")
    os.makedirs(a.outdir, exist_ok=True)
    write_csv(os.path.join(a.outdir, "gpt_oss_sink_attention.csv"), rows(a.seq))


if __name__ == "__main__":
    main()
