#!/usr/bin/env python3
"""Turns measured decode steps (scripts/gpu_decode_step.py's decode.csv) into a GPU's
`kernel_efficiency: {kv_cache_attention: ...}` curve: the rate at which a serving pass's
attention reads its KV cache, keyed by the bytes one call moves, as the simulator prices it
(sim/cost/compute_cost.cpp attention_cost: bytes / (HBM bandwidth x efficiency) + the GPU's
kernel_launch_us).

A row's attention call: one layer's SDPA over `batch` sequences of `context` cached tokens
plus the new one, timed as the profiled step's attention kernels / the layers. Its bytes are
the op list's (sim/inference/iteration_ops.cpp attention): Q and O of the new tokens, every
cached K,V read and the new K,V written, 2 bytes a value.

Fit on the rows named by --fit (batch x context; default: every other row by bytes,
starting with the smallest), judge on the rest; prints the YAML curve and the held-out errors.
Usage: python3 scripts/decode_attention_to_catalog.py DECODE_CSV --bandwidth-GBps 3350 --launch-us 4
       [--layers 32 --q-cols 4096 --cache-cols 8192] [--fit 1x128,16x128,...]
"""
import argparse
import csv


def call_bytes(batch, context, q_cols, cache_cols):
    tokens = batch  # one new token a sequence
    kv_read = batch * (context + 1)  # the cached tokens and the new one
    return 2 * tokens * (q_cols + q_cols) + 2 * (kv_read + tokens) * cache_cols


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("decode_csv")
    ap.add_argument("--bandwidth-GBps", type=float, required=True)
    ap.add_argument("--launch-us", type=float, required=True)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--q-cols", type=int, default=4096, help="query heads x head width (= output columns)")
    ap.add_argument("--cache-cols", type=int, default=8192, help="K and V columns a token caches")
    ap.add_argument("--dtype", default="bf16", help="fit on rows whose weights were in this type (the others,"
                    " the same attention beside other GEMMs, are judged)")
    ap.add_argument("--fit", default="", help="comma-separated BATCHxCONTEXT rows to fit on")
    a = ap.parse_args()

    rows = []
    for r in csv.DictReader(open(a.decode_csv)):
        b, ctx = int(r["batch"]), int(r["context"])
        t = float(r["attention_s"]) / a.layers
        nbytes = call_bytes(b, ctx, a.q_cols, a.cache_cols)
        eff = nbytes / (a.bandwidth_GBps * 1e9 * (t - a.launch_us * 1e-6))
        rows.append(dict(key=f"{b}x{ctx}", dtype=r["dtype"], bytes=nbytes, t=t, eff=eff))
    rows.sort(key=lambda r: r["bytes"])
    own = [r for r in rows if r["dtype"] == a.dtype]
    fit_keys = set(a.fit.split(",")) if a.fit else {r["key"] for r in own[::2]}
    fit = [r for r in own if r["key"] in fit_keys]
    held = [r for r in rows if r not in fit]

    def predict(nbytes):  # the simulator's interpolation: linear in log(bytes), held past the ends
        import math
        if nbytes <= fit[0]["bytes"]:
            e = fit[0]["eff"]
        elif nbytes >= fit[-1]["bytes"]:
            e = fit[-1]["eff"]
        else:
            i = next(i for i in range(1, len(fit)) if nbytes <= fit[i]["bytes"])
            x0, x1 = math.log(fit[i - 1]["bytes"]), math.log(fit[i]["bytes"])
            e = fit[i - 1]["eff"] + (math.log(nbytes) - x0) / (x1 - x0) * (fit[i]["eff"] - fit[i - 1]["eff"])
        return nbytes / (a.bandwidth_GBps * 1e9 * e) + a.launch_us * 1e-6

    print("kv_cache_attention: {fwd: [" + ", ".join(f"[{r['bytes']:.4g}, {r['eff']:.4f}]" for r in fit) + "]}")
    print(f"fit on {', '.join(r['key'] for r in fit)}")
    for r in held:
        p = predict(r["bytes"])
        print(f"  held out {r['dtype']} {r['key']:>9}: {r['bytes'] / 1e6:9.1f} MB  measured {r['t'] * 1e6:7.1f} us  "
              f"predicted {p * 1e6:7.1f} us  ({(p / r['t'] - 1) * 100:+5.1f}%)")


if __name__ == "__main__":
    main()
