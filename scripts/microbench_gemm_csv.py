#!/usr/bin/env python3
"""gpu_microbench.py's gemm.csv -> the `gpu,dtype,m,n,k,tflops` rows `twinsim fit-gemm`
reads, forward products only (F.linear / torch._scaled_mm), timed as kernels: the lower
of the CUDA-graph and the eager figure (each includes some overhead the kernel has not).
Usage: scripts/microbench_gemm_csv.py GEMM_CSV GPU_LABEL > out.csv"""
import csv
import sys


def main():
    src, gpu = sys.argv[1], sys.argv[2]
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "dtype", "layer", "m", "n", "k", "tflops", "kernel_s", "eager_s"])
    for r in csv.DictReader(open(src)):
        if r["op"] != "fwd":
            continue
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        t = min(float(r["t"]), float(r["t_eager"]))
        out.writerow([gpu, r["dtype"], r["layer"], m, n, k, f"{2 * m * n * k / t / 1e12:.2f}", f"{t:.4e}",
                      f"{float(r['t_eager']):.4e}"])


if __name__ == "__main__":
    main()
