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
sequence); then for cp in 1, 2, 4, 8 at --tokens per rank, for rank 0 (every later step with the
second half of the queries) and rank cp - 1 (every later step against half a peer's keys):
forward and forward+backward seconds, and the SDPA calls' own share. Writes
OUTDIR/ring_attention_steps.csv.

Then the questions issue #54 left after the tenth session (the compiled ring's exchange is now
priced waited whole; 8B CP 4/8 still miss about 1.6x their non-causal steps), OUTDIR/ring_probes.csv:
  * backend: which SDPA backend torchtitan's CP context picks for the whole sequence
    (sdpa_kernel([FLASH_ATTENTION, EFFICIENT_ATTENTION]), torchtitan utils.py get_train_context);
  * branch: each non-causal step's two shapes alone, flash forward and backward, and the
    memory-efficient kernel's forward at the same shapes. A compiled ring waits for every dK,dV
    pass, so each backward step lasts as long as its slower shape on any rank (lockstep), not
    their mean as sim/training/layer_costs.cpp ring_calls_s prices it;
  * contention: one backward step with a device-to-device copy of the fp32 dK,dV's bytes running
    on a side stream (the HBM traffic an eager ring's all-to-all puts beside it, NCCL's SMs aside).
Reading it (eleventh session): CP 2's published ring step (4.48 s) is its flash calls at this
repo's measured rate and the 500 W clock within 0.4%, and CP 4/8 make calls of the same shapes;
if this one-GPU loop's step is the same at cp 2, 4 and 8, what CP 4/8 miss is outside the
rank-local loop (the lockstep and exchange across 4-8 GPUs) and needs a multi-GPU profile.
Usage: python3 scripts/gpu_ring_attention_steps.py OUTDIR [--tokens 32768] [--heads 32]
Not yet run on a GPU (written on machines without torch): expect to fix small things there.
"""
import argparse
import os

import torch
import torch.nn.functional as F

from gpu_microbench import median_seconds, write_csv

FLASH = torch.ops.aten._scaled_dot_product_flash_attention.default
FLASH_BWD = torch.ops.aten._scaled_dot_product_flash_attention_backward.default
EFFICIENT = torch.ops.aten._scaled_dot_product_efficient_attention.default


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
        for rank in sorted({0, cp - 1}):  # the same pairs; the two extremes of the shapes
            yield from rank_rows(cp, rank, tokens, heads, d)


def rank_rows(cp, rank, tokens, heads, d):
    """One rank's ring at `cp`: forward, backward, and the forward's SDPA calls alone."""
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
    print(f"cp {cp} rank {rank}: forward {t_fwd * 1e3:.1f} ms ({flops / t_fwd / 1e12:.0f} TFLOP/s; SDPA calls alone "
          f"{t_kernels * 1e3:.1f} ms), backward {t_bwd * 1e3:.1f} ms ({2.5 * flops / t_bwd / 1e12:.0f} TFLOP/s)",
          flush=True)
    yield dict(cp=cp, rank=rank, tokens_per_rank=tokens, heads=heads, head_dim=d, rank_fwd_flops=flops, fwd_s=t_fwd,
               fwd_sdpa_calls_s=t_kernels, bwd_s=t_bwd)
    del q, kvs, grad_out, out, lse, saved
    torch.cuda.empty_cache()


def chosen_backend(seq, heads, d):
    """The backend SDPA picks for the whole causal sequence under torchtitan's CP context."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = torch.empty(1, heads, seq, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        choice = torch._fused_sdp_choice(q, q, q, is_causal=True)
    del q
    return SDPBackend(choice).name


def branch_rows(tokens, heads, d):
    """A later step's two shapes alone: (L queries x L/2 keys) where i <= rank, (L/2 x L) where
    i > rank; the same pairs, (L^2 / 2) x heads."""
    q, kvs, grad_out = tensors(1, tokens, heads, d)
    k, v = kvs[0]
    shapes = {"all_queries_half_keys": (q, k.chunk(2, dim=2)[0], v.chunk(2, dim=2)[0]),
              "half_queries_all_keys": (q.chunk(2, dim=2)[1], k, v)}
    for name, (qi, ki, vi) in shapes.items():
        res = FLASH(qi, ki, vi, 0.0, False)
        out, lse, cq, ck, mq, mk, seed, offset, _ = res
        g = grad_out[:, :, : qi.shape[2]]
        flops = 4 * heads * d * qi.shape[2] * ki.shape[2]
        t_fwd = median_seconds(lambda: FLASH(qi, ki, vi, 0.0, False), 0.5, 10)
        t_bwd = median_seconds(lambda: FLASH_BWD(g, qi, ki, vi, out, lse, cq, ck, mq, mk, 0.0, False, seed, offset),
                               0.5, 10)
        t_eff = median_seconds(lambda: EFFICIENT(qi, ki, vi, None, True, 0.0, False), 0.5, 10)
        print(f"branch {name}: flash forward {t_fwd * 1e3:.2f} ms ({flops / t_fwd / 1e12:.0f} TFLOP/s), backward "
              f"{t_bwd * 1e3:.2f} ms ({2.5 * flops / t_bwd / 1e12:.0f}); efficient forward {t_eff * 1e3:.2f} ms",
              flush=True)
        yield dict(probe="branch", name=name, queries=qi.shape[2], keys=ki.shape[2], heads=heads, head_dim=d,
                   fwd_flops=flops, flash_fwd_s=t_fwd, flash_bwd_s=t_bwd, efficient_fwd_s=t_eff, copy_bytes=0)


def contention_rows(tokens, heads, d):
    """One later backward step alone and beside a side-stream copy of the fp32 dK,dV's bytes."""
    q, kvs, grad_out = tensors(1, tokens, heads, d)
    k, v = kvs[0]
    qi, ki, vi = q, k.chunk(2, dim=2)[0], v.chunk(2, dim=2)[0]
    out, lse, cq, ck, mq, mk, seed, offset, _ = FLASH(qi, ki, vi, 0.0, False)
    step = lambda: FLASH_BWD(grad_out, qi, ki, vi, out, lse, cq, ck, mq, mk, 0.0, False, seed, offset)
    nbytes = 2 * k.numel() * 4  # fp32 dK and dV of the rank's chunk
    src = torch.empty(nbytes, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    side = torch.cuda.Stream()
    alone = median_seconds(step, 0.5, 10)

    def beside():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(4):
                dst.copy_(src)
        step()
        torch.cuda.current_stream().wait_stream(side)

    together = median_seconds(beside, 0.5, 10)
    print(f"contention: backward step {alone * 1e3:.2f} ms alone, {together * 1e3:.2f} ms beside 4 copies of "
          f"{nbytes / 2**30:.2f} GiB", flush=True)
    yield dict(probe="contention", name="bwd_step_beside_copies", queries=qi.shape[2], keys=ki.shape[2], heads=heads,
               head_dim=d, fwd_flops=0, flash_fwd_s=0, flash_bwd_s=alone, efficient_fwd_s=together,
               copy_bytes=4 * nbytes)


def probe_rows(tokens, heads, d):
    for cp in (2, 4, 8):
        backend = chosen_backend(cp * tokens, heads, d)
        print(f"backend at {cp * tokens} tokens under sdpa_kernel([FLASH, EFFICIENT]): {backend}", flush=True)
        yield dict(probe="backend", name=backend, queries=cp * tokens, keys=cp * tokens, heads=heads, head_dim=d,
                   fwd_flops=0, flash_fwd_s=0, flash_bwd_s=0, efficient_fwd_s=0, copy_bytes=0)
    yield from branch_rows(tokens, heads, d)
    yield from contention_rows(tokens, heads, d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--heads", type=int, default=32)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    check_numerics()
    write_csv(os.path.join(args.out, "ring_attention_steps.csv"), rows((1, 2, 4, 8), args.tokens, args.heads, 128))
    write_csv(os.path.join(args.out, "ring_probes.csv"), probe_rows(args.tokens, args.heads, 128))


if __name__ == "__main__":
    main()
