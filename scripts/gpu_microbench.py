#!/usr/bin/env python3
"""Measures, on the GPU it runs on, the kernel figures twinsim's catalog prices, with
PyTorch (cuBLAS/cuBLASLt, PyTorch's flash and cuDNN attention, its copy kernels):

  gemm.csv       F.linear shapes of real transformer layers (Llama-3 8B/70B, 70B at TP8,
                 GPT-3 175B at TP8, a TP8 vocabulary slice), tokens 1..16384, bf16 and fp8
                 (torch._scaled_mm, e4m3), and the two backward products (dgrad, wgrad)
  attention.csv  scaled_dot_product_attention, FlashAttention papers' convention (batch x
                 sequence = 16k tokens, hidden 2048, head width 64/128), causal or not,
                 forward and forward+backward, per backend
  memory.csv     copy and add by size (1 MiB .. 4 GiB): achieved bytes/s, launch floor
  kernels.csv    norms, activations, residual, softmax, cross entropy (fwd, bwd) by shape;
                 fused AdamW by parameter count
  dispatch.csv   host time per eager PyTorch op (tiny tensors: launch-bound)
  meta.json      device, driver, torch, CUDA and cuDNN versions, date

Times are CUDA-event medians after warm-up, kernels under a millisecond replayed from a
CUDA graph so that the host's dispatch does not count (t; t_eager keeps the eager time); weights rotate through buffers bigger than
L2 so that a decode-sized product reads its weights from HBM, as in a real model.
Usage: python3 scripts/gpu_microbench.py OUTDIR [--quick]
"""
import argparse
import csv
import datetime
import json
import math
import os
import statistics
import subprocess
import time
import traceback

import torch
import torch.nn.functional as F

L2_DEFEAT_BYTES = 512 << 20  # rotate operands through more than any GPU's L2 (H200: 60 MB)


def median_seconds(fn, min_total_s=0.05, max_reps=50, calls_per_event=1):
    """Median of CUDA-event timings of `calls_per_event` calls, after warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    first = max(start.elapsed_time(stop) / 1e3, 1e-7)
    reps = int(min(max_reps, max(5, min_total_s / (first * calls_per_event))))
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(calls_per_event):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / calls_per_event)
    return statistics.median(times)


def graph_of(fn, calls=1, warmups=3):
    """`calls` calls of fn captured in one CUDA graph, after `warmups` calls on a side
    stream (as PyTorch asks before a capture)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmups):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return graph


def kernel_seconds(fn, max_calls=64):
    """Device time per call with the host out of the way: calls that take under a
    millisecond eagerly are captured into one CUDA graph of up to `max_calls` calls and
    replayed, so the GPU never waits for PyTorch's dispatch (~6-13 us per op on the
    machine measured) between kernels. Returns (eager seconds per call, kernel seconds)."""
    eager = median_seconds(fn)
    if eager >= 1e-3:
        return eager, eager
    calls = max(2, min(max_calls, math.ceil(2e-3 / eager)))
    try:
        graph = graph_of(fn, calls)
        t = median_seconds(graph.replay) / calls
        del graph
        return eager, t
    except RuntimeError as e:  # not capturable: the eager figure, marked by t == t_eager
        print("graph capture failed, eager time kept:", str(e).splitlines()[0])
        torch.cuda.synchronize()
        return eager, eager


def rotating(make, nbytes):
    """Enough copies of an operand that cycling through them misses L2."""
    copies = max(1, min(16, math.ceil(L2_DEFEAT_BYTES / max(nbytes, 1))))
    return [make() for _ in range(copies)]


# (layer, N = out features, K = in features); sources: the models' config.json files.
LAYERS = [
    ("llama3-8b.qkv", 6144, 4096), ("llama3-8b.o", 4096, 4096),
    ("llama3-8b.gate_up", 28672, 4096), ("llama3-8b.down", 4096, 14336),
    ("llama3-70b.qkv", 10240, 8192), ("llama3-70b.o", 8192, 8192),
    ("llama3-70b.gate_up", 57344, 8192), ("llama3-70b.down", 8192, 28672),
    ("llama3-70b-tp8.qkv", 1280, 8192), ("llama3-70b-tp8.o", 8192, 1024),
    ("llama3-70b-tp8.gate_up", 7168, 8192), ("llama3-70b-tp8.down", 8192, 3584),
    ("gpt3-175b-tp8.qkv", 4608, 12288), ("gpt3-175b-tp8.o", 12288, 1536),
    ("gpt3-175b-tp8.fc1", 6144, 12288), ("gpt3-175b-tp8.fc2", 12288, 6144),
    ("llama3-tp8.lm_head", 16032, 4096),
]
TOKENS = [1, 16, 64, 256, 1024, 2048, 4096, 8192, 16384]


def gemm_row(layer, op, dtype, m, n, k, fn):
    eager, t = kernel_seconds(fn)
    return dict(layer=layer, op=op, dtype=dtype, m=m, n=n, k=k, t=t, t_eager=eager)


def gemm_rows(quick):
    dev = torch.device("cuda")
    tokens = [1, 64, 1024, 8192] if quick else TOKENS
    for layer, n, k in LAYERS:
        for m in tokens:
            w_bytes = n * k * 2
            ws = rotating(lambda: torch.randn(n, k, device=dev, dtype=torch.bfloat16), w_bytes)
            x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            it = iter(range(1 << 62))
            fwd = lambda: F.linear(x, ws[next(it) % len(ws)])
            yield gemm_row(layer, "fwd", "bf16", m, n, k, fwd)
            if m >= 1024:
                dy = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
                dgrad = lambda: torch.matmul(dy, ws[next(it) % len(ws)])            # [m,n]x[n,k]
                wgrad = lambda: torch.matmul(dy.t(), x)                             # [n,m]x[m,k]
                yield gemm_row(layer, "dgrad", "bf16", m, n, k, dgrad)
                yield gemm_row(layer, "wgrad", "bf16", m, n, k, wgrad)
                del dy
            if m >= 16 and hasattr(torch, "_scaled_mm"):
                try:
                    w8 = rotating(lambda: torch.randn(n, k, device=dev).to(torch.float8_e4m3fn), n * k)
                    x8 = x.to(torch.float8_e4m3fn)
                    one = torch.ones((), device=dev)
                    fp8 = lambda: torch._scaled_mm(x8, w8[next(it) % len(w8)].t(), scale_a=one,
                                                   scale_b=one, out_dtype=torch.bfloat16)
                    yield gemm_row(layer, "fwd", "fp8", m, n, k, fp8)
                    del w8
                except (RuntimeError, TypeError) as e:
                    print(f"fp8 {layer} m={m}: {e}".splitlines()[0])
            del ws, x
        torch.cuda.empty_cache()


def attention_rows(quick):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dev = torch.device("cuda")
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    seqs = [1024, 4096, 16384] if quick else [512, 1024, 2048, 4096, 8192, 16384]
    for name, backend in backends.items():
        for d in (64, 128):
            heads = 2048 // d
            for s in seqs:
                batch = max(1, 16384 // s)
                for causal in (False, True):
                    q, kk, v = (torch.randn(batch, heads, s, d, device=dev, dtype=torch.bfloat16,
                                            requires_grad=True) for _ in range(3))
                    # FlashAttention papers' count: 4*b*h*s^2*d forward, halved when causal
                    flops = 4 * batch * heads * s * s * d / (2 if causal else 1)
                    try:
                        with sdpa_kernel(backend):
                            out = F.scaled_dot_product_attention(q, kk, v, is_causal=causal)
                            g = torch.randn_like(out)
                            fwd = lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=causal)
                            t_fwd = median_seconds(fwd)
                            def fwd_bwd():
                                o = F.scaled_dot_product_attention(q, kk, v, is_causal=causal)
                                torch.autograd.grad(o, (q, kk, v), g)
                            t_all = median_seconds(fwd_bwd)
                    except RuntimeError as e:
                        print(f"attention {name} d={d} s={s}: {e}".splitlines()[0])
                        continue
                    yield dict(backend=name, batch=batch, heads=heads, seq=s, head_dim=d,
                               causal=int(causal), fwd_s=t_fwd, fwd_bwd_s=t_all, fwd_flops=flops)
                    del q, kk, v, out, g
        torch.cuda.empty_cache()


def memory_rows(quick):
    dev = torch.device("cuda")
    sizes = [1 << p for p in range(20, 33, 2 if quick else 1)]  # 1 MiB .. 4 GiB
    for nbytes in sizes:
        n = nbytes // 2
        a = torch.randn(n, device=dev, dtype=torch.bfloat16)
        b = torch.empty_like(a)
        c = torch.randn_like(a)
        e_copy, t_copy = kernel_seconds(lambda: b.copy_(a))
        e_add, t_add = kernel_seconds(lambda: torch.add(a, c, out=b))
        yield dict(kernel="copy", bytes_per_tensor=nbytes, moved_bytes=2 * nbytes, t=t_copy, t_eager=e_copy)
        yield dict(kernel="add", bytes_per_tensor=nbytes, moved_bytes=3 * nbytes, t=t_add, t_eager=e_add)
        del a, b, c
    torch.cuda.empty_cache()


def without_grad(fn):
    with torch.no_grad():
        return fn()


def memory_kernel_rows(quick):
    """The memory-bound kernels of a transformer step (models/layer_ops.hpp's kernel
    names) on bf16 activations of tokens x width, forward and backward (autograd's
    kernels, weight-gradient reductions included), and fused AdamW on fp32 states."""
    dev = torch.device("cuda")
    shapes = [(4096, 4096), (16384, 8192)] if quick else \
             [(2048, 4096), (8192, 4096), (16384, 4096), (8192, 8192), (16384, 8192), (8192, 28672)]
    for tokens, width in shapes:
        x = torch.randn(tokens, width, device=dev, dtype=torch.bfloat16, requires_grad=True)
        x2 = torch.randn(tokens, width, device=dev, dtype=torch.bfloat16, requires_grad=True)
        w = torch.ones(width, device=dev, dtype=torch.bfloat16, requires_grad=True)
        b = torch.zeros(width, device=dev, dtype=torch.bfloat16, requires_grad=True)
        kernels = {
            "layernorm": (lambda: F.layer_norm(x, (width,), w, b), (x, w, b)),
            "rmsnorm": (lambda: F.rms_norm(x, (width,), w), (x, w)),
            "gelu": (lambda: F.gelu(x, approximate="tanh"), (x,)),
            "swiglu": (lambda: F.silu(x) * x2, (x, x2)),
            "residual": (lambda: x + x2, (x, x2)),
            "softmax": (lambda: torch.softmax(x, -1), (x,)),
        }
        for name, (fwd, inputs) in kernels.items():
            _, t_fwd = kernel_seconds(lambda: without_grad(fwd))
            out = fwd()
            g = torch.randn_like(out)
            bwd = lambda: torch.autograd.grad(out, inputs, g, retain_graph=True)
            bwd_eager, t_bwd = kernel_seconds(bwd)
            yield dict(kernel=name, tokens=tokens, width=width, fwd_s=t_fwd, bwd_s=t_bwd, bwd_eager_s=bwd_eager)
            del out, g
        labels = torch.randint(0, width, (tokens,), device=dev)
        logits = x.detach().float().requires_grad_(True)  # cross entropy on fp32 logits (vocab = width)
        ce = lambda: F.cross_entropy(logits, labels)
        _, t_ce = kernel_seconds(lambda: without_grad(ce))
        loss = ce()
        ce_eager, t_ce_bwd = kernel_seconds(lambda: torch.autograd.grad(loss, (logits,), retain_graph=True))
        yield dict(kernel="cross_entropy", tokens=tokens, width=width, fwd_s=t_ce, bwd_s=t_ce_bwd, bwd_eager_s=ce_eager)
        del x, x2, w, b, logits, loss
        torch.cuda.empty_cache()
    for params in ([1 << 24, 1 << 28] if quick else [1 << 22, 1 << 24, 1 << 26, 1 << 28]):
        p, gr, m, v = (torch.randn(params, device=dev) for _ in range(4))
        step = torch.tensor(1.0, device=dev)
        adam = lambda: torch._fused_adamw_([p], [gr], [m], [v], [], [step], lr=1e-4, beta1=0.9, beta2=0.95,
                                           weight_decay=0.1, eps=1e-8, amsgrad=False, maximize=False)
        _, t = kernel_seconds(adam)
        yield dict(kernel="adamw_fp32", tokens=params, width=1, fwd_s=t, bwd_s=0.0, bwd_eager_s=0.0)
        del p, gr, m, v
    torch.cuda.empty_cache()


def dispatch_rows():
    """Host seconds per eager op: the GPU finishes a 1-element op long before the host
    has issued the next, so the wall time per op is the dispatch path's."""
    dev = torch.device("cuda")
    x = torch.ones(1, device=dev)
    w = torch.ones(64, 64, device=dev, dtype=torch.bfloat16)
    xb = torch.ones(1, 64, device=dev, dtype=torch.bfloat16)
    ops = {"add": lambda: torch.add(x, x), "linear": lambda: F.linear(xb, w),
           "layer_norm": lambda: F.layer_norm(xb, (64,)), "softmax": lambda: torch.softmax(xb, -1)}
    for name, fn in ops.items():
        for _ in range(1000):
            fn()
        torch.cuda.synchronize()
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        yield dict(op=name, calls=n, host_s_per_op=(time.perf_counter() - t0) / n)


def profiled_kernels(fn):
    """{kernel name: [calls, device microseconds]} of the CUDA kernels fn runs, from
    torch.profiler's CUDA activity (fn synchronises before it returns)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
    kernels = {}
    for e in prof.events():
        if not str(e.device_type).endswith("CUDA"):
            continue
        k = kernels.setdefault(e.name, [0, 0.0])
        k[0] += 1
        k[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    return kernels


def write_csv(path, rows):
    """Row by row, flushed: a section that fails half-way keeps what it measured."""
    n = 0
    with open(path, "w", newline="") as f:
        w = None
        for row in rows:
            if w is None:
                w = csv.DictWriter(f, fieldnames=list(row.keys()))
                w.writeheader()
            w.writerow(row)
            f.flush()
            n += 1
    print(f"wrote {path}: {n} rows", flush=True)


def meta():
    p = torch.cuda.get_device_properties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    return dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(), device=p.name,
                sms=p.multi_processor_count, memory_bytes=p.total_memory, nvidia_smi=smi,
                torch=torch.__version__, cuda=torch.version.cuda,
                torch_cuda_compiled=getattr(torch._C, "_cuda_getCompiledVersion", lambda: None)(),
                cudnn=torch.backends.cudnn.version())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(os.path.join(args.outdir, "meta.json"), "w") as f:
        json.dump(meta(), f, indent=1)
    t0 = time.time()
    # kernels last: it captures autograd's backward into CUDA graphs, the least proven path
    sections = [("dispatch", lambda: dispatch_rows()), ("memory", lambda: memory_rows(args.quick)),
                ("attention", lambda: attention_rows(args.quick)), ("gemm", lambda: gemm_rows(args.quick)),
                ("kernels", lambda: memory_kernel_rows(args.quick))]
    failed = 0
    for name, rows in sections:
        try:  # one section's failure keeps the others' figures
            write_csv(os.path.join(args.outdir, name + ".csv"), rows())
        except Exception:
            traceback.print_exc()
            failed += 1
    print(f"done in {time.time() - t0:.0f} s, {failed} section(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
