#!/usr/bin/env python3
"""One GPU, one real decode step, measured: Llama-2-7B's shapes (random weights, bf16; the
linear layers also in fp8) decoding one token for a batch of sequences over a KV cache, in
the kernel structure a serving engine runs (one fused QKV product, one gate-up product, the
new token's K,V written into a contiguous cache, SDPA over the cached keys, greedy sampling),
to set beside twinsim's prediction of the same pass (`inference` with output_len 2).

Writes to OUTDIR:
  launch.csv          the per-kernel floor: N back-to-back tiny kernels, eager and replayed
                      from a CUDA graph (seconds a kernel), 1-element and decode-sized tensors
  decode.csv          per (dtype, batch, context): the step's median seconds eager (host-bound
                      dispatch) and replayed from a CUDA graph (what vLLM and TensorRT-LLM
                      run), and, from one profiled eager step, the device busy time by kind
                      (gemm, attention, other kernels) and the kernel count
  decode_kernels.csv  every kernel of those profiled steps (name, calls, device us)
  prefill.csv         the forward of a batch-1 prompt (no cache), eager, by prompt length
Usage: python3 scripts/gpu_decode_step.py OUTDIR
"""
import os
import statistics
import sys
import traceback

import torch
import torch.nn.functional as F

from gpu_microbench import graph_of, profiled_kernels, write_csv  # scripts/: graph capture, torch.profiler's kernels, the CSV writer

# Llama-2-7B (meta-llama/Llama-2-7b-hf config.json): multi-head attention, no GQA
H, HEADS, HEAD_DIM, FF, LAYERS, VOCAB = 4096, 32, 128, 11008, 32, 32000
EPS = 1e-5
POINTS = [(1, 128), (1, 1024), (1, 4096), (8, 1024), (16, 128), (16, 1024), (16, 4096),
          (64, 128), (64, 512), (64, 1024), (256, 128), (256, 256)]
FP8_POINTS = [(16, 128), (64, 128), (64, 1024), (256, 128)]
PREFILL_LENS = [128, 512, 2048]


def event_median(fn, reps):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def launch_rows():
    rows = []
    for label, shape in (("1 element", (1,)), ("64x4096 bf16", (64, 4096))):
        x = torch.zeros(shape, device="cuda", dtype=torch.bfloat16)
        n = 2000

        def chain():
            for _ in range(n):
                x.add_(1)
        eager = event_median(chain, 5) / n
        g = graph_of(chain, warmups=2)
        graphed = event_median(g.replay, 5) / n
        rows.append(dict(tensor=label, kernels=n, eager_s_per_kernel=eager, graph_s_per_kernel=graphed))
        print(rows[-1], flush=True)
    return rows


class Weights:
    def __init__(self):
        def rand(*shape):
            return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 0.02
        self.emb = rand(VOCAB, H)
        self.head = rand(VOCAB, H)
        self.norm_final = torch.ones(H, device="cuda", dtype=torch.bfloat16)
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append(dict(n1=torch.ones(H, device="cuda", dtype=torch.bfloat16),
                                    n2=torch.ones(H, device="cuda", dtype=torch.bfloat16),
                                    qkv=rand(3 * H, H), o=rand(H, H), gu=rand(2 * FF, H), down=rand(H, FF)))
        self.fp8 = None

    def make_fp8(self):
        """The linear layers' weights in e4m3 with a per-tensor scale of 1 (TensorRT-LLM's
        static per-tensor recipe: the activation is cast with a calibrated scale)."""
        self.fp8 = [{k: v.to(torch.float8_e4m3fn) for k, v in l.items() if k in ("qkv", "o", "gu", "down")}
                    for l in self.layers]
        self.one = torch.ones((), device="cuda", dtype=torch.float32)


def linear(x, w_bf16, w_fp8, one):
    if w_fp8 is None:
        return F.linear(x, w_bf16)
    return torch._scaled_mm(x.to(torch.float8_e4m3fn), w_fp8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def rope_tables(max_pos):
    inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, device="cuda", dtype=torch.float32) / HEAD_DIM))
    ang = torch.outer(torch.arange(max_pos, device="cuda", dtype=torch.float32), inv)
    return ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)


def rope(x, cos, sin):  # x [..., HEAD_DIM], rotate-half (Llama)
    x1, x2 = x[..., : HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def decode_step(w, tok, kc, vc, ctx, cos, sin, use_fp8):
    """One token for each of the batch's sequences at position ctx (ctx tokens cached)."""
    b = tok.shape[0]
    x = w.emb[tok]
    c, s = cos[ctx], sin[ctx]
    for i, l in enumerate(w.layers):
        f = w.fp8[i] if use_fp8 else {}
        h = F.rms_norm(x, (H,), l["n1"], EPS)
        qkv = linear(h, l["qkv"], f.get("qkv"), getattr(w, "one", None)).view(b, 3, HEADS, HEAD_DIM)
        qk = rope(qkv[:, :2], c, s)  # q and k together: [b, 2, heads, head_dim]
        kc[i][:, :, ctx] = qk[:, 1]
        vc[i][:, :, ctx] = qkv[:, 2]
        a = F.scaled_dot_product_attention(qk[:, 0].unsqueeze(2), kc[i], vc[i])  # [b, heads, 1, hd]
        x = x + linear(a.reshape(b, H), l["o"], f.get("o"), getattr(w, "one", None))
        h = F.rms_norm(x, (H,), l["n2"], EPS)
        g, u = linear(h, l["gu"], f.get("gu"), getattr(w, "one", None)).chunk(2, dim=-1)
        x = x + linear(F.silu(g) * u, l["down"], f.get("down"), getattr(w, "one", None))
    logits = F.linear(F.rms_norm(x, (H,), w.norm_final, EPS), w.head)
    return logits.argmax(dim=-1)


def kind_of(name):
    n = name.lower()
    if any(t in n for t in ("flash", "fmha", "attention", "cudnn", "sdpa")):
        return "attention"
    if any(t in n for t in ("gemm", "nvjet", "cutlass", "xmma", "gemv", "matmul", "sm90_", "sm80_")):
        return "gemm"
    return "other"


def kv_cache(b, ctx):
    """Each layer's K and V: ctx cached tokens plus the one a step writes (attention reads ctx + 1)."""
    def one():
        return [torch.randn(b, HEADS, ctx + 1, HEAD_DIM, device="cuda", dtype=torch.bfloat16) for _ in range(LAYERS)]
    return one(), one()


def measure_step(step, dtype, b, ctx, kernel_rows):
    """decode.csv's row for one step function: eager and graph-replayed medians, and one profiled
    eager step's kernels by kind (appended to kernel_rows)."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    eager = event_median(step, 10)
    g = graph_of(step, warmups=2)
    graphed = event_median(g.replay, 20)
    kernels = profiled_kernels(lambda: (step(), torch.cuda.synchronize()))
    busy = {"gemm": 0.0, "attention": 0.0, "other": 0.0}
    for name, (calls, us) in kernels.items():
        busy[kind_of(name)] += us / 1e6
        kernel_rows.append(dict(point=f"{dtype} b{b} ctx{ctx}", kernel=name, kind=kind_of(name), calls=calls,
                                device_us=round(us, 2)))
    del g
    return dict(dtype=dtype, batch=b, context=ctx, eager_s=eager, graph_s=graphed,
                kernels=sum(c for c, _ in kernels.values()), busy_s=sum(busy.values()),
                gemm_s=busy["gemm"], attention_s=busy["attention"], other_s=busy["other"])


def decode_point(w, b, ctx, use_fp8, cos, sin, kernel_rows):
    kc, vc = kv_cache(b, ctx)
    tok = torch.randint(0, VOCAB, (b,), device="cuda")
    row = measure_step(lambda: decode_step(w, tok, kc, vc, ctx, cos, sin, use_fp8), "fp8" if use_fp8 else "bf16",
                       b, ctx, kernel_rows)
    del kc, vc
    torch.cuda.empty_cache()
    return row


def prefill_rows(w, cos, sin):
    rows = []
    for n in PREFILL_LENS:
        ids = torch.randint(0, VOCAB, (1, n), device="cuda")
        c, s = cos[:n].view(n, 1, HEAD_DIM // 2), sin[:n].view(n, 1, HEAD_DIM // 2)

        def forward():
            x = w.emb[ids[0]]  # [n, H]
            for l in w.layers:
                h = F.rms_norm(x, (H,), l["n1"], EPS)
                qkv = F.linear(h, l["qkv"]).view(n, 3, HEADS, HEAD_DIM)
                q, k = rope(qkv[:, 0], c, s), rope(qkv[:, 1], c, s)
                a = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                                   qkv[:, 2].transpose(0, 1)[None], is_causal=True)  # [1, heads, n, hd]
                x = x + F.linear(a[0].transpose(0, 1).reshape(n, H), l["o"])
                h = F.rms_norm(x, (H,), l["n2"], EPS)
                g, u = F.linear(h, l["gu"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(g) * u, l["down"])
            return F.linear(F.rms_norm(x[-1:], (H,), w.norm_final, EPS), w.head).argmax(-1)
        for _ in range(3):
            forward()
        torch.cuda.synchronize()
        rows.append(dict(batch=1, prompt=n, eager_s=event_median(forward, 10)))
        print(rows[-1], flush=True)
    return rows


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    try:
        write_csv(os.path.join(out, "launch.csv"), launch_rows())
    except Exception:
        traceback.print_exc()
    w = Weights()
    cos, sin = rope_tables(8192)
    rows, kernel_rows = [], []
    for use_fp8, points in ((False, POINTS), (True, FP8_POINTS)):
        if use_fp8:
            try:
                w.make_fp8()
            except Exception:
                traceback.print_exc()
                break
        for b, ctx in points:
            try:
                rows.append(decode_point(w, b, ctx, use_fp8, cos, sin, kernel_rows))
                print(rows[-1], flush=True)
            except Exception as e:  # one point's failure keeps the others
                print(f"b{b} ctx{ctx} fp8={use_fp8}: {type(e).__name__}: {e}".splitlines()[0], flush=True)
                torch.cuda.empty_cache()
        write_csv(os.path.join(out, "decode.csv"), rows)
        write_csv(os.path.join(out, "decode_kernels.csv"), kernel_rows)
    try:
        write_csv(os.path.join(out, "prefill.csv"), prefill_rows(w, cos, sin))
    except Exception:
        traceback.print_exc()


if __name__ == "__main__":
    main()
