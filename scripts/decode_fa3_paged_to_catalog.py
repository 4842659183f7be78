#!/usr/bin/env python3
"""Fits the cache-read rate of FlashAttention-3's paged decode with a 128-row query tile (the
kernel vLLM 0.8's FLASH_ATTN backend runs on Hopper, before vllm-project/flash-attention PR
#63) from published timings (scenarios/validation/microbench/decode_attention_fa3_paged_published.csv)
and writes it as a GPU's `kv_attention_fa3_m128_efficiency`: the fraction of HBM bandwidth its
K,V read reaches (sim/cost/compute_cost.cpp attention_cost).

A row is one batch decode call: `batch` sequences of `seqlen` cached tokens, num_kv_heads K,V
heads of head_dim in 16 bits read once. The rows of one GPU and implementation fit as

    time = fixed + seqlen x per_token

on --fit's seqlens (default: the two longest); the fixed part (launch, split-KV merge, the
benchmark's) is not taken, per_token gives bytes/s over the datasheet bandwidth. The other
rows are judged with the fitted line. Rows of GPUs without a bandwidth below are context only.
Usage: python3 scripts/decode_fa3_paged_to_catalog.py CSV [--fit 2000,4000]
"""
import argparse
import csv

BANDWIDTH = {"H100-80GB-HBM3": 3.35e12}  # datasheet "GPU memory bandwidth 3.35TB/s" (H100 SXM)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--fit", default="", help="seqlens to fit (default: the two longest)")
    a = ap.parse_args()
    series = {}
    for r in csv.DictReader(open(a.csv)):
        if r["gpu"] in BANDWIDTH and r["implementation"] == "fa3_paged_m128":
            series.setdefault(r["gpu"], []).append(r)
    for gpu, rows in series.items():
        rows.sort(key=lambda r: int(r["seqlen"]))
        wanted = {int(x) for x in a.fit.split(",")} if a.fit else {int(r["seqlen"]) for r in rows[-2:]}
        fit = [r for r in rows if int(r["seqlen"]) in wanted]
        (s0, t0), (s1, t1) = [(int(r["seqlen"]), float(r["time_us"]) * 1e-6) for r in fit[:2]]
        per_token = (t1 - t0) / (s1 - s0)
        fixed = t0 - per_token * s0
        r = rows[-1]
        bytes_per_token = int(r["batch"]) * int(r["num_kv_heads"]) * int(r["head_dim"]) * 2 * 2  # K and V
        rate = bytes_per_token / per_token
        print(f"{gpu}: fixed {fixed * 1e6:.1f} us, {rate / 1e12:.3f} TB/s = "
              f"kv_attention_fa3_m128_efficiency {rate / BANDWIDTH[gpu]:.3f}")
        for r in rows:
            s, t = int(r["seqlen"]), float(r["time_us"]) * 1e-6
            role = "fit " if r in fit else "held"
            line = fixed + per_token * s
            print(f"    {role} seqlen {s:5d}: {t * 1e6:7.1f} us, line {line * 1e6:7.1f} ({line / t - 1:+.1%})")


if __name__ == "__main__":
    main()
