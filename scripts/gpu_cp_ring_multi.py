#!/usr/bin/env python3
"""PyTorch's own ring attention (context_parallel) across the GPUs of one node, at the shapes of
torchtitan's Llama 3.1 8B CP runs, to decide issue #54's CP 4/8 gap (needs 4-8 GPUs; one GPU is
scripts/gpu_ring_attention_steps.py).

The runs (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 2; torch 1963fc8,
torchtitan 9dec370; 32,768 tokens per GPU at CP 1/2/4/8) publish 3890 / 2540 / 1071 / 548 tok/s per
GPU: a step of 8.42 / 12.90 / 30.60 / 59.80 s. One ring step, (step(cp) - step(1)) / (cp - 1),
is 4.48 s at CP 2 but 7.39 / 7.34 s at CP 4 / 8: 140 vs 231 / 229 ms a layer (32 layers). CP 2's
equals its flash calls at this repo's measured rate (h100/attention.csv, 500 W clock); CP 4/8 make
calls of the same shapes (torch/distributed/tensor/experimental/_attention.py: load-balanced
halves, one K,V all-gather a pass, an fp32 dK,dV all-to-all after every backward step). No source
read in sessions 9-13 prices ~90 ms a layer a step that CP 4/8 pay and CP 2 does not.

This times one layer's attention core (q, k, v of 32 heads x 128, bf16, repeated K,V as torchtitan
passes them) under context_parallel on a (world / cp, cp) mesh, every GPU in a ring as in the
runs, for cp in 2, 4, 8 (and the local causal call, cp 1): forward and backward, eager and
torch.compile(fullgraph=True), rotate method allgather (torchtitan's default) and alltoall. Each
row is the slowest rank's CUDA-event median. Then three conditions at the largest cp, compiled:
  * memory: a filler leaves --free-gib free (the runs reserved 84.0-84.5 of 89.4 GiB), with the
    caching allocator's num_alloc_retries before and after;
  * fsdp: an 8-rank all-gather of one 8B layer's bf16 parameters (436 MB) looping on a side stream
    (FSDP2's prefetch sharing NVLink and SMs with the ring);
  * profile: one forward+backward under torch.profiler, device time by kernel family (flash,
    nccl, other) and the span, written per rank.
Reading it: the ring step here is ((fwd + bwd)(cp) - (fwd + bwd)(1)) / (cp - 1), plus one more
forward step for full AC's recompute. At 700 W expect CP 2's about 0.88 x 140 = 123 ms.
  * if cp 4 and 8 give about CP 2's step in every variant, the ring is not the gap: profile a whole
    torchtitan 9dec370 step at CP 2 and CP 4 (the loss, FSDP, the optimizer at 128k/256k);
  * if they give about 1.65x CP 2's, the profile's split (flash kernels longer, nccl longer, or
    idle between) names the mechanism, and the condition that reproduces it (compiled only,
    allgather only, under memory pressure, beside FSDP's gathers) is what sim/ must price.
Usage: torchrun --nproc-per-node 8 scripts/gpu_cp_ring_multi.py OUTDIR [--tokens 32768]
Not yet run (written without a GPU or torch; lent devices have one GPU): expect small fixes.
"""
import argparse
import csv
import os
import statistics

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.attention import SDPBackend, sdpa_kernel

LAYER_PARAM_BYTES = 4096 * (4096 + 2 * 1024 + 4096 + 3 * 14336) * 2  # a Llama 3 8B layer's bf16 weights (436 MB)


def cp_api():
    from torch.distributed.tensor.experimental import context_parallel

    try:
        from torch.distributed.tensor.experimental import set_rotate_method
    except ImportError:
        from torch.distributed.tensor.experimental._attention import set_rotate_method
    return context_parallel, set_rotate_method


def slowest(seconds):
    """The largest of every rank's figure: a ring's layer lasts as long as its slowest rank."""
    t = torch.tensor([seconds], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def median_s(fn, reps):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    start, stop, times = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return slowest(statistics.median(times))


def global_qkv(cp, tokens, heads, d):
    """The whole sequence's q, k, v (every rank the same, seeded), sharded on entry to the context."""
    g = torch.Generator(device="cuda").manual_seed(0)
    make = lambda: torch.randn(1, heads, cp * tokens, d, device="cuda", dtype=torch.bfloat16, generator=g)
    return make(), make(), make()


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def layer_fn(compiled):
    """The call as torchtitan's compiled TransformerBlock makes it; a fresh trace per variant (the
    rotate method and the mesh are read while tracing, and dynamo's cache would fall back to eager)."""
    if not compiled:
        return attention
    torch._dynamo.reset()
    return torch.compile(attention, fullgraph=True)


def time_layer(q, k, v, fn, reps):
    """Forward alone, and forward + backward, of one call on the rank's shard."""
    grad = torch.randn_like(q)

    def fwd():
        with torch.no_grad():
            fn(q, k, v)

    def fwd_bwd():
        out = fn(q, k, v)
        out.backward(grad)
        q.grad = k.grad = v.grad = None

    return median_s(fwd, reps), median_s(fwd_bwd, reps)


def ring_row(world, cp, tokens, heads, d, compiled, rotate, reps, extra=None):
    """One (cp, compiled, rotate) variant: the slowest rank's forward and forward + backward."""
    context_parallel, set_rotate_method = cp_api()
    q, k, v = global_qkv(cp, tokens, heads, d)
    row = dict(cp=cp, compiled=int(compiled), rotate=rotate, condition="", tokens_per_rank=tokens)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
        if cp == 1:
            fn = layer_fn(compiled)
            for t in (q, k, v):
                t.requires_grad_(True)
            row["fwd_s"], row["fwd_bwd_s"] = time_layer(q, k, v, fn, reps)
            return row
        set_rotate_method(rotate)
        mesh = init_device_mesh("cuda", (world // cp, cp), mesh_dim_names=("dp", "cp"))
        with context_parallel(mesh["cp"], buffers=[q, k, v], buffer_seq_dims=[2, 2, 2]):
            for t in (q, k, v):
                t.requires_grad_(True)
            fn = layer_fn(compiled)
            if extra is not None:
                return extra(row, q, k, v, fn)
            row["fwd_s"], row["fwd_bwd_s"] = time_layer(q, k, v, fn, reps)
    return row


def with_ring_step(rows):
    """Each row's ring step against cp 1's (matched on compiled): (t(cp) - t(1)) / (cp - 1), with one
    forward (ring_step_s) and, where the forward was timed, two as full AC runs it (..._full_ac_s)."""
    rows = list(rows)
    local = {r["compiled"]: r for r in rows if r["cp"] == 1}
    for r in rows:
        base = local.get(r["compiled"])
        timed = r["cp"] > 1 and base is not None and r["fwd_bwd_s"] > 0
        step = lambda key: (r[key] - base[key]) / (r["cp"] - 1)
        r["ring_step_s"] = step("fwd_bwd_s") if timed else 0.0
        full_ac = timed and r["fwd_s"] > 0
        r["ring_step_full_ac_s"] = step("fwd_bwd_s") + step("fwd_s") if full_ac else 0.0
    return rows


def memory_condition(free_gib, reps):
    def run(row, q, k, v, fn):
        free, _ = torch.cuda.mem_get_info()
        filler = torch.empty(max(0, free - int(free_gib * 2**30)), dtype=torch.uint8, device="cuda")
        before = torch.cuda.memory_stats().get("num_alloc_retries", 0)
        row["fwd_s"], row["fwd_bwd_s"] = time_layer(q, k, v, fn, reps)
        row["condition"] = f"free_{free_gib}GiB_retries_{torch.cuda.memory_stats().get('num_alloc_retries', 0) - before}"
        del filler
        return row

    return run


def fsdp_condition(reps):
    """The ring beside an all-gather of one layer's parameters over every GPU, looping."""

    def run(row, q, k, v, fn):
        world = dist.get_world_size()
        shard = torch.empty(LAYER_PARAM_BYTES // world, dtype=torch.uint8, device="cuda")
        full = torch.empty(LAYER_PARAM_BYTES, dtype=torch.uint8, device="cuda")
        side = torch.cuda.Stream()

        def beside(inner):
            def both():
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(8):
                        dist.all_gather_into_tensor(full, shard)
                inner()
                torch.cuda.current_stream().wait_stream(side)

            return both

        grad = torch.randn_like(q)

        def fwd_bwd():
            fn(q, k, v).backward(grad)
            q.grad = k.grad = v.grad = None

        row["fwd_bwd_s"] = median_s(beside(fwd_bwd), reps)
        row["fwd_s"], row["condition"] = 0.0, "beside_8_fsdp_layer_gathers"
        return row

    return run


def profile_condition(out_dir):
    """One forward + backward under the profiler: device time by kernel family, per rank."""

    def run(row, q, k, v, fn):
        from torch.profiler import ProfilerActivity, profile

        grad = torch.randn_like(q)
        for _ in range(2):
            fn(q, k, v).backward(grad)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(q, k, v).backward(grad)
            torch.cuda.synchronize()
        families = {"flash": 0.0, "nccl": 0.0, "other": 0.0}
        for e in prof.key_averages():
            # self time: a kernel's own, not again under the aten op that launched it
            t = getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) / 1e6
            name = e.key.lower()
            families["nccl" if "nccl" in name else "flash" if "flash" in name else "other"] += t
        path = os.path.join(out_dir, f"cp_ring_profile_rank{dist.get_rank()}.csv")
        write_csv(path, [dict(cp=row["cp"], family=f, device_s=t) for f, t in families.items()])
        row.update(fwd_s=0.0, fwd_bwd_s=0.0, condition="profiled")
        return row

    return run


def write_csv(path, rows):
    rows = list(rows)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}: {len(rows)} rows", flush=True)


def all_rows(world, args):
    cps = [c for c in (1, 2, 4, 8) if world % c == 0]
    base = dict(tokens=args.tokens, heads=args.heads, d=128, reps=args.reps)
    for compiled in (True, False):
        for rotate in ("allgather", "alltoall"):
            for cp in cps:
                if cp > 1 or rotate == "allgather":
                    yield ring_row(world, cp, base["tokens"], base["heads"], base["d"], compiled, rotate, args.reps)
    top = cps[-1]
    for extra in (memory_condition(args.free_gib, args.reps), fsdp_condition(args.reps), profile_condition(args.out)):
        yield ring_row(world, top, base["tokens"], base["heads"], base["d"], True, "allgather", args.reps, extra)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=32768)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--free-gib", type=float, default=5.4)  # 89.4 - 84.0 GiB, the runs' headroom
    args = ap.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    world = dist.get_world_size()
    if world < 4:
        raise SystemExit("needs 4-8 GPUs on one node (torchrun --nproc-per-node 8): CP 4/8's gap is cross-GPU")
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for row in all_rows(world, args):
        rows.append(row)
        if dist.get_rank() == 0:
            print(row, flush=True)
    if dist.get_rank() == 0:
        write_csv(os.path.join(args.out, "cp_ring_multi.csv"), with_ring_step(rows))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
