#!/usr/bin/env python3
"""How fast does the power limit act? The GEMM rate, call by call, after the GPU has idled.

gpu_gemm_duty_cycle.py shows the clock set by the mix of a few-millisecond loop; a training
step also has long phases without tensor-core work (pipeline bubbles, exposed data-parallel
collectives, the optimizer). Whether those count depends on how quickly the limit reacts:

  for each idle gap G: 1.5 s of back-to-back GEMMs (the GPU at its power limit), then G of
  idling (the host waits), then 120 GEMMs back to back, each between CUDA events.

Writes OUTDIR/power_response.csv: gap, call index, the call's start after the gap ends (ms),
its TFLOP/s. Usage: python3 scripts/gpu_power_response.py OUTDIR
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

from gpu_microbench import write_csv  # scripts/: one CSV writer for the GPU scripts

M, N, K = 8192, 28672, 4096  # Llama-3-8B's MLP up/gate product at 8k tokens (about 2.5 ms)
GAPS_MS = [0, 2, 10, 50, 200, 1000]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02
    rows = []
    for gap in GAPS_MS:
        began = time.time()
        while time.time() - began < 1.5:  # heat: the limit engaged
            for _ in range(16):
                F.linear(x, w)
            torch.cuda.synchronize()
        time.sleep(gap / 1e3)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(121)]
        for start, stop in events:
            start.record()
            F.linear(x, w)
            stop.record()
        torch.cuda.synchronize()
        t0 = events[0][0]
        for i, (start, stop) in enumerate(events[1:]):  # the first call carries the host's wake-up
            rows.append(dict(gap_ms=gap, call=i, start_ms=round(t0.elapsed_time(start), 3),
                             tflops=round(2 * M * N * K / (start.elapsed_time(stop) / 1e3) / 1e12, 1)))
        firsts = [r["tflops"] for r in rows[-120:]]
        print(f"gap {gap} ms: calls 0-4 {firsts[:5]}, 20-24 {firsts[20:25]}, last {firsts[-3:]}", flush=True)
    write_csv(os.path.join(out, "power_response.csv"), rows)


if __name__ == "__main__":
    main()
