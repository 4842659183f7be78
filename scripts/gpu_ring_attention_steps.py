#!/usr/bin/env python3
"""The compute side of PyTorch's ring attention (context parallelism) on one GPU, without its
collectives: what one rank's kernels and merges cost against one causal SDPA of the same FLOPs.

torchtitan's Llama 3.1 8B CP runs (benchmarks/llama3_h100_202412_torchtitan.md, Table 2; 32,768
tokens per GPU at CP 1/2/4/8) measure 8.42 / 12.9 / 30.6 / 59.8 s a step, where the attention at
the flash kernel's measured rate leaves 4.2 / 4.5 / 13.7 / 26 s: at CP 4 and 8 the attention costs
about twice its kernel rate (issue #54). This script times one rank's part of the 2024-12 loop
(torch/distributed/tensor/experimental/_attention.py: load-balanced chunks, a causal local step,
then non-causal steps against the first half of a peer's K,V or with the second half of the
queries, fp32 merges of the partial outputs; the backward's fp32 dQ, dK, dV accumulators and
partial updates), written here from that description, with the K,V of every rank already on the
GPU: the exchange is priced separately (sim/training/torch_cp_exchange.hpp).

First a numerics check at a small size (the loop's output rows against causal SDPA over the whole
sequence); then for cp in 1, 2, 4, 8 at --tokens per rank: forward and forward+backward seconds,
and the SDPA calls' own share. Writes OUTDIR/ring_attention_steps.csv.
Usage: python3 scripts/gpu_ring_attention_steps.py OUTDIR [--tokens 32768] [--heads 32]
Not yet run on a GPU (written on a machine without torch): expect to fix small things there.
"""
import argparse
import os

import torch
import torch.nn.functional as F

from gpu_microbench import median_seconds, write_csv

FLASH = torch.ops.aten._scaled_dot_product_flash_attention.default
FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_backward.default


def positions(rank, cp, tokens):
    """The sequence positions a rank holds under load balancing: chunks rank and 2cp-1-rank."""
    half = tokens // 2
    first = torch.arange(rank * half, (rank + 1) * half)
    second = torch.arange((2 * cp - 1 - rank) * half, (2 * cp - rank) * half)
    return torch.cat([first, second]).cuda()


def step_inputs(i, rank, q, kv):
    """Step i's queries, keys and values, whether causal, and whether it updates the second half."""
    k, v = kv
    if i == 0:
        return q, k, v, True, False
    if i <= rank:  # a lower rank's K,V: only its first chunk precedes both of our chunks
        return q, k.chunk(2, dim=2)[0], v.chunk(2, dim=2)[0], False, False
    return q.chunk(2, dim=2)[1], k, v, False, True  # a higher rank's: only our second chunk sees it


class Merger:
    """The partial outputs merged in fp32, as _SDPAMerger does (convert_to_f32)."""

    def __init__(self):
        self.out = self.lse = None

    def step(self, block_out, block_lse, partial):
        block_out, block_lse = block_out.float(), block_lse.float().unsqueeze(-1)
        if self.out is None:
            self.out, self.lse = block_out, block_lse
            return
        out, lse = (self.out.chunk(2, dim=2)[1], self.lse.chunk(2, dim=2)[1]) if partial else (self.out, self.lse)
        new_out = out - torch.sigmoid(block_lse - lse) * (out - block_out)
        new_lse = lse - F.logsigmoid(lse - block_lse)
        if partial:
            out.copy_(new_out)
            lse.copy_(new_lse)
        else:
            self.out, self.lse = new_out, new_lse


def ring_forward(rank, cp, q, kvs):
    merger, saved = Merger(), []
    for i in range(cp):
        qi, ki, vi, causal, partial = step_inputs(i, rank, q, kvs[(rank - i) % cp])
        res = FLASH(qi, ki, vi, 0.0, causal)
        saved.append(res)
        merger.step(res[0], res[1], partial)
    return merger.out.to(q.dtype), merger.lse.squeeze(-1), saved


def ring_backward(rank, cp, q, kvs, out, lse, grad_out, saved):
    dq = torch.zeros_like(q, dtype=torch.float32)
    passed = None
    for i in range(cp):
        qi, ki, vi, causal, partial = step_inputs(i, rank, q, kvs[(rank - i) % cp])
        outi, lsei, gi = (out, lse, grad_out) if not partial else (
            out.chunk(2, dim=2)[1], lse.chunk(2, dim=2)[1].contiguous(), grad_out.chunk(2, dim=2)[1])
        _, _, cq, ck, mq, mk, seed, offset, _ = saved[i]
        gq, gk, gv = FLASH_BWD(gi, qi, ki, vi, outi, lsei, cq, ck, mq, mk, 0.0, causal, seed, offset)
        if partial:  # _partial_update: a copy of the accumulator with one chunk added to
            acc = dq.clone()
            acc.chunk(2, dim=2)[1].add_(gq)
            dq = acc
        else:
            dq += gq
        # the peer's fp32 dK,dV accumulator this rank adds to (received, then passed on)
        k, v = kvs[(rank - i) % cp]
        dk, dv = torch.zeros_like(k, dtype=torch.float32), torch.zeros_like(v, dtype=torch.float32)
        if i != 0 and i <= rank:
            dk, dv = dk.clone(), dv.clone()
            dk.chunk(2, dim=2)[0].add_(gk)
            dv.chunk(2, dim=2)[0].add_(gv)
        else:
            dk += gk
            dv += gv
        passed = torch.cat([dk.flatten(), dv.flatten()])  # the buffer passed to the next rank
    return dq.to(q.dtype), passed


def tensors(cp, tokens, heads, d, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    shape = (1, heads, tokens, d)
    make = lambda: torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
    return make(), [(make(), make()) for _ in range(cp)], make()


def check_numerics(cp=4, tokens=512, heads=4, d=128):
    """The loop's output for every rank against causal SDPA over the whole sequence."""
    qs = [torch.randn(1, heads, tokens, d, device="cuda", dtype=torch.bfloat16) for _ in range(cp)]
    kvs = [tuple(torch.randn(1, heads, tokens, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
           for _ in range(cp)]
    seq = cp * tokens
    full = [torch.empty(1, heads, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    for r in range(cp):
        pos = positions(r, cp, tokens)
        for t, src in zip(full, (qs[r], kvs[r][0], kvs[r][1])):
            t[:, :, pos] = src
    reference = F.scaled_dot_product_attention(*full, is_causal=True)
    worst = 0.0
    for r in range(cp):
        out, _, _ = ring_forward(r, cp, qs[r], kvs)
        worst = max(worst, (out.float() - reference[:, :, positions(r, cp, tokens)].float()).abs().max().item())
    print(f"numerics: ring output against causal SDPA, max |diff| {worst:.4f}", flush=True)
    if worst > 3e-2:
        raise SystemExit("the emulated ring does not reproduce causal attention: fix before timing")


def rows(cps, tokens, heads, d):
    for cp in cps:
        rank = cp - 1  # any rank: load balancing gives each the same work
        q, kvs, grad_out = tensors(cp, tokens, heads, d)
        flops = 4 * heads * d * tokens * (cp * tokens) / 2  # the rank's share of causal attention

        def fwd():
            with torch.no_grad():
                return ring_forward(rank, cp, q, kvs)

        out, lse, saved = fwd()

        def bwd():
            with torch.no_grad():
                ring_backward(rank, cp, q, kvs, out, lse, grad_out, saved)

        def kernels_fwd():
            for i in range(cp):
                qi, ki, vi, causal, _ = step_inputs(i, rank, q, kvs[(rank - i) % cp])
                FLASH(qi, ki, vi, 0.0, causal)

        t_fwd, t_bwd = median_seconds(fwd, 0.5, 10), median_seconds(bwd, 0.5, 10)
        t_kernels = median_seconds(kernels_fwd, 0.5, 10)
        print(f"cp {cp}: forward {t_fwd * 1e3:.1f} ms ({flops / t_fwd / 1e12:.0f} TFLOP/s; SDPA calls alone "
              f"{t_kernels * 1e3:.1f} ms), backward {t_bwd * 1e3:.1f} ms ({2.5 * flops / t_bwd / 1e12:.0f} TFLOP/s)",
              flush=True)
        yield dict(cp=cp, tokens_per_rank=tokens, heads=heads, head_dim=d, rank_fwd_flops=flops, fwd_s=t_fwd,
                   fwd_sdpa_calls_s=t_kernels, bwd_s=t_bwd)
        del q, kvs, grad_out, out, lse, saved
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--heads", type=int, default=32)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    check_numerics()
    write_csv(os.path.join(args.out, "ring_attention_steps.csv"), rows((1, 2, 4, 8), args.tokens, args.heads, 128))


if __name__ == "__main__":
    main()
