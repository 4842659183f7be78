#!/usr/bin/env python3
"""bf16 products whose output tiles fill the GPU's SMs well or badly, measured cool: to judge
the simulator's wave quantization (sim/cost/compute_cost.cpp gemm_wave_utilization) and the
tile choices a GPU lists (gemm_tile_edges) on shapes chosen for it, not for a curve.

Every m x n output of m in {256, 512, 768, 1024, 2048, 3072, 4096} and n in {1024, 1280,
1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 8192, 12288}, k = 4096: F.linear(x[m,k],
w[n,k]) in bf16, timed as a CUDA graph of 10 calls replayed 7 times with 20 ms of idle before
each replay (the GPU stays cool, as the catalog's curves are: OpenXLA's and cuBLASLt's
single-kernel timings), the median per call.
Writes OUTDIR/gemm_tiles.csv: gpu,dtype,layer,m,n,k,tflops,kernel_s (the layer column says the
rows are row-major F.linear products, as `twinsim fit-gemm` reads them).
Usage: python3 scripts/gpu_gemm_tiles.py OUTDIR
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from gpu_microbench import graph_of, write_csv  # scripts/: graph capture after side-stream warm-ups, the CSV writer

MS = [256, 512, 768, 1024, 2048, 3072, 4096]
NS = [1024, 1280, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 8192, 12288]
K = 4096
CALLS = 10


def time_shape(m, n, k):
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    g = graph_of(lambda: F.linear(x, w), calls=CALLS)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(7):
        torch.cuda.synchronize()
        time.sleep(0.02)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3 / CALLS)
    return statistics.median(times)


def sweep_rows(gpu):
    for m in MS:
        for n in NS:
            t = time_shape(m, n, K)
            yield dict(gpu=gpu, dtype="bf16", layer="tile_sweep", m=m, n=n, k=K,
                       tflops=round(2 * m * n * K / t / 1e12, 2), kernel_s=f"{t:.4e}")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write_csv(os.path.join(out, "gemm_tiles.csv"), sweep_rows(torch.cuda.get_device_name()))


if __name__ == "__main__":
    main()
