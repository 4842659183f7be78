#!/usr/bin/env python3
"""Fits the rate of FlashInfer's CUDA-core decode kernel from the bandwidth figures its
authors published (scenarios/validation/microbench/decode_attention_flashinfer_blog_h100_a100.csv)
and writes it as a GPU's `kv_attention_cuda_core_efficiency`: the fraction of the fp32 (CUDA
core) peak that the kernel's attention math reaches (sim/cost/compute_cost.cpp attention_cost).

A row is one batch decode call: `batch` sequences of `seqlen` cached tokens, num_kv_heads K,V
heads of head_dim in 16 bits read once, num_qo_heads query heads. Its time is the bytes over
(bandwidth_utilization x the GPU's bandwidth, the blog's own figures: H100 SXM 3,352 GB/s,
A100 PCIe 1,935 GB/s). Each implementation's rows fit as

    time = fixed + seqlen x per_token

(least squares on --fit's rows, default every other row from the second): the blog's calls
carry a fixed ~10-25 us that its nvbench setup adds (cold L2, the split-KV merge), which is
not the kernel's rate and is not taken; per_token gives the rate in bytes/s and in attention
FLOP/s (4 x head_dim per query head and cached token: QK^T and PV). The held-out rows are
judged with the fitted line. Prints the rate as a fraction of HBM (memory-bound kernels) and
of the fp32 peak (the CUDA-core kernel at 8 query heads per KV head: math-bound).

--gqa4 CSV (decode_attention_flashinfer_gqa4_issue703.csv: the same kernel at 4 query heads per
KV head, one A100 call) also fits the CUDA-core kernel's work per cached token and KV head as
(group + token_heads) query heads' worth, FlashInfer 0.2's batch decode running groups 3, 4 and 8
in the same 128-thread CTA (include/flashinfer/attention/decode.cuh at v0.2.3, lines 728-731):
time(4) / time(8) = (4 + token_heads) / (8 + token_heads) on the A100 (the blog's group-8 slope
against that call), and prints the fp32 fraction with that work counted (the catalog's
`kv_attention_cuda_core_efficiency`; sim/cost/compute_cost.cpp kFlashInferCudaCoreTokenHeads).
Usage: python3 scripts/decode_cuda_core_to_catalog.py CSV [--fit 512,2048,8192] [--gqa4 CSV]
"""
import argparse
import csv

BANDWIDTH = {"H100-SXM5-80GB": 3352e9, "A100-PCIE-80GB": 1935e9}  # the blog's table
FP32_PEAK = {"H100-SXM5-80GB": 67e12, "A100-PCIE-80GB": 19.5e12}  # datasheets (CUDA cores)


def read(path):
    series = {}
    for r in csv.DictReader(open(path)):
        b, s = int(r["batch"]), int(r["seqlen"])
        kvh, qh, d = int(r["num_kv_heads"]), int(r["num_qo_heads"]), int(r["head_dim"])
        bytes_ = b * s * kvh * d * 2 * 2  # K and V, 2 bytes a value
        t = bytes_ / (float(r["bandwidth_utilization_pct"]) / 100 * BANDWIDTH[r["gpu"]])
        key = (r["gpu"], r["implementation"], b, qh // kvh)
        series.setdefault(key, []).append(dict(seqlen=s, t=t, bytes=bytes_, flops=b * s * qh * 4 * d))
    return series


def line(points):
    n = len(points)
    mx = sum(p["seqlen"] for p in points) / n
    my = sum(p["t"] for p in points) / n
    slope = sum((p["seqlen"] - mx) * (p["t"] - my) for p in points) / sum((p["seqlen"] - mx) ** 2 for p in points)
    return my - slope * mx, slope


def token_heads(series, gqa4_path):
    """The query heads' worth of work a cached token costs the CUDA-core kernel besides its group."""
    row = next(r for r in csv.DictReader(open(gqa4_path)) if r["implementation"] == "flashinfer_cuda_cores")
    b, s, kvh, d = int(row["batch"]), int(row["seqlen"]), int(row["num_kv_heads"]), int(row["head_dim"])
    group = int(row["num_qo_heads"]) // kvh
    rate4 = b * s * kvh * d * 4 / (float(row["time_ms"]) * 1e-3)  # K,V bytes a second, the whole call
    rows = sorted(series[("A100-PCIE-80GB", "flashinfer_cuda_cores", 64, 8)], key=lambda r: r["seqlen"])
    _, per_token = line([r for r in rows if r["seqlen"] in (512, 2048, 8192)])
    rate8 = rows[-1]["bytes"] / rows[-1]["seqlen"] / per_token
    ratio = rate8 / rate4  # time a byte at `group` over time a byte at 8
    heads = (8 * ratio - group) / (1 - ratio)  # (group + h) / (8 + h) = ratio
    print(f"A100 CUDA cores: group 8 {rate8 / 1e12:.3f} TB/s, group {group} {rate4 / 1e12:.3f} TB/s: "
          f"token_heads {heads:.2f}")
    return heads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--fit", default="", help="seqlens to fit (default: every other row from the second)")
    ap.add_argument("--gqa4", default="", help="the group-4 CUDA-core call (issue #703's CSV)")
    a = ap.parse_args()
    series = read(a.csv)
    heads = token_heads(series, a.gqa4) if a.gqa4 else 0.0
    for (gpu, impl, batch, group), rows in sorted(series.items()):
        rows.sort(key=lambda r: r["seqlen"])
        wanted = {int(x) for x in a.fit.split(",")} if a.fit else {r["seqlen"] for r in rows[1::2]}
        fit = [r for r in rows if r["seqlen"] in wanted]
        if len(fit) < 2:
            continue
        fixed, per_token = line(fit)
        last = rows[-1]
        bytes_rate = last["bytes"] / last["seqlen"] / per_token
        flop_rate = last["flops"] / last["seqlen"] / per_token
        print(f"{gpu} {impl} batch {batch} group {group}: fixed {fixed * 1e6:.1f} us, "
              f"{bytes_rate / 1e12:.3f} TB/s = {bytes_rate / BANDWIDTH[gpu]:.3f} of HBM, "
              f"{flop_rate / 1e12:.2f} TFLOP/s = {flop_rate / FP32_PEAK[gpu]:.4f} of fp32")
        if heads and impl == "flashinfer_cuda_cores" and group == 8:  # (group + token_heads) heads' work
            work = flop_rate * (group + heads) / group
            print(f"    with token_heads {heads:.2f}: {work / FP32_PEAK[gpu]:.4f} of fp32")
        for r in rows:
            role = "fit " if r in fit else "held"
            pred = fixed + per_token * r["seqlen"]
            print(f"    {role} seqlen {r['seqlen']:5d}: {r['t'] * 1e6:8.1f} us, line {pred * 1e6:8.1f} "
                  f"({pred / r['t'] - 1:+.1%})")


if __name__ == "__main__":
    main()
