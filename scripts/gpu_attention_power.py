#!/usr/bin/env python3
"""Does fused attention load the power limit as a GEMM does? Each kernel's rate on a cool GPU
(after 1.5 s idle: the first calls) and sustained (back to back for SECONDS, medians after the
first second), with the SM clock and board power nvidia-smi reads at the end. A GEMM (Llama-3-8B's
MLP product) is the reference: the catalog's power_limited_gemm counts attention's time as
tensor-core load, like a GEMM's, which these rows judge.

Writes OUTDIR/attention_power.csv. Usage: python3 scripts/gpu_attention_power.py OUTDIR [SECONDS]
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from gpu_gemm_duty_cycle import smi, timed
from gpu_microbench import write_csv


def cool_rate(fn, flops):
    torch.cuda.synchronize()
    time.sleep(1.5)
    events = [timed(fn) for _ in range(4)]
    torch.cuda.synchronize()
    return flops / statistics.median(a.elapsed_time(b) / 1e3 for a, b in events[1:]) / 1e12


def sustained_s(fn, seconds):
    """Back to back for `seconds`, each call waited for (long kernels: the queue stays short);
    the median of the calls after the first second."""
    times, began = [], time.time()
    while time.time() - began < seconds:
        at = time.time() - began
        a, b = timed(fn)
        b.synchronize()
        if at >= 1.0:
            times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def main():
    out = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    os.makedirs(out, exist_ok=True)
    cases = []
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(28672, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
    cases.append(("gemm 8192x28672x4096", "cublas", lambda: F.linear(x, w), 2 * 8192 * 28672 * 4096))
    for backend, name in [(SDPBackend.FLASH_ATTENTION, "flash2"), (SDPBackend.CUDNN_ATTENTION, "cudnn")]:
        for seq in (8192, 32768):
            q, k, v = (torch.randn(1, 32, seq, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            g = torch.randn(1, 32, seq, 128, device="cuda", dtype=torch.bfloat16)
            causal_flops = 4 * seq * seq * 128 * 32 / 2  # QK^T and PV, half the square

            def fwd(q=q, k=k, v=v, backend=backend):
                with sdpa_kernel(backend), torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def fwd_bwd(q=q, k=k, v=v, g=g, backend=backend):
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)

            cases.append((f"attention causal seq {seq} hd 128 fwd", name, fwd, causal_flops))
            cases.append((f"attention causal seq {seq} hd 128 fwd+bwd", name, fwd_bwd, 3.5 * causal_flops))
    rows = []
    for what, backend, fn, flops in cases:
        try:
            cool = cool_rate(fn, flops)
            t = sustained_s(fn, seconds)
        except RuntimeError as e:
            print(f"{what} {backend}: {str(e).splitlines()[0]}", flush=True)
            continue
        row = dict(kernel=what, backend=backend, cool_tflops=round(cool, 1), sustained_tflops=round(flops / t / 1e12, 1),
                   ratio=round(flops / t / 1e12 / cool, 3), sm_clock_mhz=smi("clocks.sm"), power_w=smi("power.draw"))
        rows.append(row)
        print(row, flush=True)
    write_csv(os.path.join(out, "attention_power.csv"), rows)


if __name__ == "__main__":
    main()
