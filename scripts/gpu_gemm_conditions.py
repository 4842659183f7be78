#!/usr/bin/env python3
"""Does a GEMM's measured rate depend on how it is measured? The same bf16 shapes timed
under each condition a microbenchmark may differ from a training step in:

  data      weights N(0,1) (gpu_microbench.py) or N(0, 0.02) (Hugging Face / Megatron
            initialisation); zeros (an uninitialised cudaMemset buffer, bench_cuda_kernels)
  layout    F.linear (x W^T, what nn.Linear runs) or torch.matmul (x W)
  rotation  one weight, or copies rotating past L2
  pacing    each call timed alone, waited for (gpu_microbench.py) or 20 calls back to back

Writes OUTDIR/gemm_conditions.csv: shape, condition, seconds per call, TFLOP/s.
Usage: python3 scripts/gpu_gemm_conditions.py OUTDIR
"""
import os
import sys

import torch
import torch.nn.functional as F

from gpu_microbench import median_seconds, write_csv  # scripts/: CUDA-event medians after warm-up; the CSV writer

SHAPES = [(8192, 28672, 4096), (8192, 4096, 14336), (8192, 8192, 8192), (4096, 4096, 4096)]  # m, n, k


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rows = []
    for m, n, k in SHAPES:
        flops = 2 * m * n * k
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        for data, scale in (("randn", 1.0), ("randn*0.02", 0.02), ("zeros", 0.0)):
            w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * scale
            wt = w.t().contiguous()  # [k, n] for x W
            xs = x if data != "zeros" else torch.zeros_like(x)
            copies = [w.clone() for _ in range(4)]
            it = iter(range(1 << 62))
            cases = {
                "linear": lambda: F.linear(xs, w),
                "linear,rotating": lambda: F.linear(xs, copies[next(it) % 4]),
                "matmul": lambda: torch.matmul(xs, wt),
            }
            for layout, fn in cases.items():
                for pacing in ("synced", "back_to_back"):
                    t = median_seconds(fn, calls_per_event=20 if pacing == "back_to_back" else 1)
                    rows.append(dict(m=m, n=n, k=k, data=data, call=layout, pacing=pacing, t=t,
                                     tflops=round(flops / t / 1e12, 1)))
                    print(rows[-1], flush=True)
            del w, wt, copies
        del x
        torch.cuda.empty_cache()
    write_csv(os.path.join(out, "gemm_conditions.csv"), rows)


if __name__ == "__main__":
    main()
