#!/usr/bin/env python3
"""Times, on the GPU it runs on, the memory-bound work of one torchtitan Llama-3.1-8B step
on one rank of the 8-GPU FSDP run (scenarios/validation/training/torchtitan-llama31-8b-8gpu-
fsdp*.yaml: 2 x 8192 tokens, hidden 4096, FFN 14336, vocabulary 128256, a 1/8 shard of the
parameters), at those shapes, for issue #54 (the torchtitan runs predicted too fast):

  kernels.csv  kernel, pass, elements, op_list_bytes, seconds, fraction (of --hbm-GBps)
    rmsnorm / swiglu / rope / residual: torchtitan's own module code (torchtitan 9dec370,
        models/llama/model.py) under torch.compile, forward and forward+backward, with the
        op list's bytes per element (sim: fused rows, 4/8, 6/12, 4/8, 6/12)
    loss_eager: cross_entropy(logits.float()) uncompiled, as torchtitan 2024-12's train.py
        runs it (the census's 14 / 22 bytes a logit)
    adamw_foreach / clip_grad_norm: torch.optim.AdamW(foreach=True).step() and
        clip_grad_norm_(foreach=True) over the 1/8 shards of the 8B model's 291 tensors
        (the sim's 72 + 2 x 4 and 3 x 4 bytes a parameter)
    fsdp_copy_in / fsdp_copy_out / fsdp_rs_copy_in: FSDP2's per-layer passes as
        torch/distributed/_composable/fsdp/_fsdp_collectives.py (2024) runs them: the fp32
        shard cast to bf16 and copied into the all-gather input (10 bytes a shard element),
        split_with_sizes_copy of the gathered bf16 layer (4 a parameter), torch._chunk_cat
        of the bf16 grads into the fp32 reduce-scatter input (6 a parameter)
  meta.json    as scripts/gpu_microbench.py writes it

Not run yet (written without a device). Usage:
  python3 scripts/gpu_torchtitan_step_kernels.py OUTDIR [--hbm-GBps 3350]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import kernel_seconds, median_seconds, meta, write_csv  # noqa: E402

TOKENS, HIDDEN, FFN, VOCAB, KV = 2 * 8192, 4096, 14336, 128256, 1024
HEADS, HEAD_DIM, RANKS = 32, 128, 8


def rmsnorm(x, w, eps=1e-5):  # torchtitan RMSNorm._norm and forward
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def swiglu(a, b):  # FeedForward: silu(w1 x) * w3 x
    return F.silu(a) * b


def rope(xq, xk, freqs_cis):  # apply_rotary_emb
    q = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis.view(1, q.shape[1], 1, q.shape[-1])
    return (torch.view_as_real(q * f).flatten(3).type_as(xq), torch.view_as_real(k * f).flatten(3).type_as(xk))


def residual(x, y):
    return x + y


def row(kernel, pass_, elements, bytes_per_element, seconds, hbm):
    b = bytes_per_element * elements
    return dict(kernel=kernel, pass_=pass_, elements=elements, op_list_bytes=b, seconds=seconds,
                fraction=b / seconds / hbm)


def fwd_bwd_rows(name, fn, inputs, elements, fwd_bytes, bwd_bytes, hbm):
    compiled = torch.compile(fn)
    with torch.no_grad():
        _, t_fwd = kernel_seconds(lambda: compiled(*inputs))
    yield row(name, "fwd", elements, fwd_bytes, t_fwd, hbm)
    out = compiled(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    grads = [torch.randn_like(o) for o in outs]
    t_bwd = median_seconds(lambda: torch.autograd.grad(outs, inputs, grads, retain_graph=True))
    yield row(name, "bwd", elements, bwd_bytes, t_bwd, hbm)


def layer_rows(hbm):
    dev, bf = "cuda", torch.bfloat16
    x = torch.randn(2, 8192, HIDDEN, device=dev, dtype=bf, requires_grad=True)
    y = torch.randn_like(x, requires_grad=True)
    w = torch.ones(HIDDEN, device=dev, dtype=bf, requires_grad=True)
    yield from fwd_bwd_rows("rmsnorm", rmsnorm, (x, w), TOKENS * HIDDEN, 4, 8, hbm)
    yield from fwd_bwd_rows("residual", residual, (x, y), TOKENS * HIDDEN, 6, 12, hbm)
    a = torch.randn(2, 8192, FFN, device=dev, dtype=bf, requires_grad=True)
    b = torch.randn_like(a, requires_grad=True)
    yield from fwd_bwd_rows("swiglu", swiglu, (a, b), TOKENS * FFN, 6, 12, hbm)
    del a, b
    xq = torch.randn(2, 8192, HEADS, HEAD_DIM, device=dev, dtype=bf, requires_grad=True)
    xk = torch.randn(2, 8192, KV // HEAD_DIM, HEAD_DIM, device=dev, dtype=bf, requires_grad=True)
    freqs = torch.polar(torch.ones(8192, HEAD_DIM // 2, device=dev), torch.randn(8192, HEAD_DIM // 2, device=dev))
    yield from fwd_bwd_rows("rope", lambda q, k: rope(q, k, freqs), (xq, xk), TOKENS * (HIDDEN + KV), 4, 8, hbm)


def loss_rows(hbm):
    logits = torch.randn(2, 8192, VOCAB, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, VOCAB, (2 * 8192,), device="cuda")
    loss_fn = lambda: F.cross_entropy(logits.flatten(0, 1).float(), labels)  # noqa: E731
    with torch.no_grad():
        t_fwd = median_seconds(loss_fn)
    yield row("loss_eager", "fwd", TOKENS * VOCAB, 14, t_fwd, hbm)
    loss = loss_fn()
    t_bwd = median_seconds(lambda: torch.autograd.grad(loss, (logits,), retain_graph=True))
    yield row("loss_eager", "bwd", TOKENS * VOCAB, 22, t_bwd, hbm)


def shard_shapes():
    """The 8B model's tensors (32 layers of 9, 2 norms, embedding, output), each 1/8."""
    per_layer = [HIDDEN * HIDDEN, KV * HIDDEN, KV * HIDDEN, HIDDEN * HIDDEN, FFN * HIDDEN, FFN * HIDDEN,
                 HIDDEN * FFN, HIDDEN, HIDDEN]
    sizes = per_layer * 32 + [HIDDEN, VOCAB * HIDDEN, VOCAB * HIDDEN]
    return [(n + RANKS - 1) // RANKS for n in sizes], per_layer


def optimizer_rows(hbm):
    sizes, _ = shard_shapes()
    params = [torch.nn.Parameter(torch.randn(n, device="cuda")) for n in sizes]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1, foreach=True)
    n = sum(sizes)
    yield row("adamw_foreach", "step", n, 80, median_seconds(opt.step, max_reps=10), hbm)
    clip = lambda: torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)  # noqa: E731
    yield row("clip_grad_norm", "step", n, 12, median_seconds(clip, max_reps=10), hbm)


def fsdp_rows(hbm):
    _, per_layer = shard_shapes()
    shards = [torch.randn((n + RANKS - 1) // RANKS, device="cuda") for n in per_layer]
    flat = torch.empty(sum(s.numel() for s in shards), device="cuda", dtype=torch.bfloat16)
    views = list(torch.split(flat, [s.numel() for s in shards]))

    def copy_in():  # _get_param_all_gather_inputs' foreach cast, then all_gather_copy_in's copy
        casts = [s.to(torch.bfloat16) for s in shards]
        torch._foreach_copy_(views, casts)

    elements = sum(s.numel() for s in shards)
    yield row("fsdp_copy_in", "fwd", elements, 10, kernel_seconds(copy_in)[1], hbm)
    layer = sum(per_layer)
    split = [(n + RANKS - 1) // RANKS for n in per_layer]
    gathered = torch.randn(RANKS, sum(split), device="cuda", dtype=torch.bfloat16)
    outs = [torch.empty(RANKS, s, device="cuda", dtype=torch.bfloat16) for s in split]
    copy_out = lambda: torch.split_with_sizes_copy(gathered, split, dim=1, out=outs)  # noqa: E731
    yield row("fsdp_copy_out", "fwd", layer, 4, kernel_seconds(copy_out)[1], hbm)
    grads = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for n in per_layer]
    rs_input = torch.empty(RANKS, sum(split), device="cuda", dtype=torch.float32)
    chunk_cat = lambda: torch._chunk_cat(grads, dim=0, num_chunks=RANKS, out=rs_input)  # noqa: E731
    yield row("fsdp_rs_copy_in", "bwd", layer, 6, kernel_seconds(chunk_cat)[1], hbm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--hbm-GBps", type=float, default=3350, help="the datasheet bandwidth fractions are of")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "meta.json"), "w") as f:
        json.dump(meta(), f, indent=1)
    hbm = args.hbm_GBps * 1e9

    def rows():
        for section in (layer_rows, loss_rows, optimizer_rows, fsdp_rows):
            try:
                yield from section(hbm)
            except Exception as e:  # keep the other sections' rows
                print(f"{section.__name__} failed: {e}", flush=True)
            torch.cuda.empty_cache()

    write_csv(os.path.join(args.outdir, "kernels.csv"), rows())


if __name__ == "__main__":
    main()
