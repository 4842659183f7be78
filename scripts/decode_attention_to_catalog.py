#!/usr/bin/env python3
"""Turns measured decode steps (scripts/gpu_decode_step.py's decode.csv) into a GPU's
figures for a serving pass's attention over its KV cache, as the simulator prices one call
(sim/cost/compute_cost.cpp attention_cost):

    kernel_launch_us + call_us + max(bytes / (HBM bandwidth x efficiency),
                                     sequences x KV heads x sequence_kv_head_ns)

`efficiency` is the flat `kernel_efficiency: {kv_cache_attention: ...}`, `call_us` and
`sequence_kv_head_ns` the GPU's `kv_attention_latency`: large caches stream at a fixed
fraction of the bandwidth, a batch of short caches is bound by the kernel's work items.

A row's call: one layer's SDPA over `batch` sequences of `context` cached tokens plus the new
one, timed as the profiled step's attention kernels / the layers. Its bytes are the op list's
(sim/inference/iteration_ops.cpp attention): Q and O of the new tokens, every cached K,V read
and the new K,V written, 2 bytes a value.

Fits the three figures (least squares on the log of the time, a grid) on the rows named by
--fit (BATCHxCONTEXT; default: every other --dtype row by bytes, from the smallest), judges
the rest, and with --judge CSV --judge-bandwidth-GBps B another GPU's rows at its bandwidth
with the same figures. Prints the YAML and the errors.
Usage: python3 scripts/decode_attention_to_catalog.py DECODE_CSV --bandwidth-GBps 3350 --launch-us 4
       [--layers 32 --q-cols 4096 --cache-cols 8192 --kv-heads 32] [--fit 1x128,16x128,...]
       [--judge OTHER_CSV --judge-bandwidth-GBps 4800]
"""
import argparse
import csv
import math


def read_rows(path, a):
    rows = []
    for r in csv.DictReader(open(path)):
        b, ctx = int(r["batch"]), int(r["context"])
        tokens, kv_read = b, b * (ctx + 1)  # one new token a sequence; the cached tokens and it
        rows.append(dict(key=f"{r['dtype']} {b}x{ctx}", dtype=r["dtype"], batch=b, context=ctx,
                         bytes=2 * tokens * 2 * a.q_cols + 2 * (kv_read + tokens) * a.cache_cols,
                         items=b * a.kv_heads, t=float(r["attention_s"]) / a.layers))
    return sorted(rows, key=lambda r: r["bytes"])


def call_s(r, bandwidth, launch_s, eff, call, item):
    return launch_s + call + max(r["bytes"] / (bandwidth * eff), r["items"] * item)


def fit(rows, bandwidth, launch_s):
    best = None
    for eff in [x / 100 for x in range(70, 100)]:
        for item_ns in range(0, 60):
            for call_quarter_us in range(0, 24):
                call = call_quarter_us * 0.25e-6
                err = sum(math.log(call_s(r, bandwidth, launch_s, eff, call, item_ns * 1e-9) / r["t"]) ** 2 for r in rows)
                if best is None or err < best[0]:
                    best = (err, eff, call, item_ns * 1e-9)
    return best[1:]


def judge(name, rows, bandwidth, launch_s, figures):
    errors = []
    for r in rows:
        p = call_s(r, bandwidth, launch_s, *figures)
        errors.append(abs(p / r["t"] - 1))
        print(f"  {name} {r['key']:>15}: {r['bytes'] / 1e6:7.1f} MB  measured {r['t'] * 1e6:6.1f} us  "
              f"predicted {p * 1e6:6.1f} us  ({(p / r['t'] - 1) * 100:+5.1f}%)")
    errors.sort()
    n = len(errors)
    median = errors[n // 2] if n % 2 else (errors[n // 2 - 1] + errors[n // 2]) / 2
    print(f"  {name}: median |error| {median * 100:.1f}%, max {errors[-1] * 100:.1f}% ({n} rows)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("decode_csv")
    ap.add_argument("--bandwidth-GBps", type=float, required=True)
    ap.add_argument("--launch-us", type=float, required=True, help="the GPU's kernel_launch_us")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--q-cols", type=int, default=4096, help="query heads x head width (= output columns)")
    ap.add_argument("--cache-cols", type=int, default=8192, help="K and V columns a token caches")
    ap.add_argument("--kv-heads", type=int, default=32)
    ap.add_argument("--dtype", default="bf16", help="fit on rows whose weights were in this type (the others,"
                    " the same attention beside other GEMMs, are judged)")
    ap.add_argument("--fit", default="", help="comma-separated BATCHxCONTEXT rows to fit on")
    ap.add_argument("--judge", help="another GPU's decode.csv, judged with the fitted figures")
    ap.add_argument("--judge-bandwidth-GBps", type=float)
    a = ap.parse_args()

    rows = read_rows(a.decode_csv, a)
    own = [r for r in rows if r["dtype"] == a.dtype]
    keys = {f"{a.dtype} {k}" for k in a.fit.split(",")} if a.fit else {r["key"] for r in own[::2]}
    fitted = [r for r in own if r["key"] in keys]
    held = [r for r in rows if r not in fitted]
    launch_s = a.launch_us * 1e-6
    figures = fit(fitted, a.bandwidth_GBps * 1e9, launch_s)
    eff, call, item = figures
    print(f"kernel_efficiency: {{kv_cache_attention: {{fwd: [[1, {eff:.2f}]]}}}}")
    print(f"kv_attention_latency: {{call_us: {call * 1e6:.2f}, sequence_kv_head_ns: {item * 1e9:.0f}}}")
    print(f"fit on {', '.join(r['key'] for r in fitted)}")
    judge("fit", fitted, a.bandwidth_GBps * 1e9, launch_s, figures)
    judge("held out", held, a.bandwidth_GBps * 1e9, launch_s, figures)
    if a.judge:
        judge("other GPU", read_rows(a.judge, a), a.judge_bandwidth_GBps * 1e9, launch_s, figures)


if __name__ == "__main__":
    main()
