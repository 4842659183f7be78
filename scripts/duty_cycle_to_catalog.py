#!/usr/bin/env python3
"""Fits a GPU's power_limited_gemm (hardware/catalog/gpus/*.yaml) to a duty-cycle sweep
(scripts/gpu_gemm_duty_cycle.py's CSV) and prints the YAML line with the fit's errors.

The model (sim/cost/power_limit.hpp says the same in C++): in a stretch of work of T seconds
of tensor-core kernels at the catalog's (cool) rates, M seconds of memory-bound kernels and
I seconds of idling (collectives waited on),
    load  = (T + memory_bound_load * M) / (T + M + I)
    clock = 1 - slope * max(0, load - knee_load)      the GEMM's rate against its cool rate
A copy filler counts as memory-bound time, a spin-kernel (sleep) filler as idle time. T is
the GEMM's time at its cool rate: the highest rate its shape reached in the sweep.

Fit: the rows of one shape and dtype (--fit-shape, default the bf16 8192x28672x4096 MLP
product), copy and idle fillers both (together they tell memory_bound_load from knee_load);
every other shape and dtype judges it, and so do rows whose filler is SwiGLU's eager
silu(gate) * up (a layer's real element-wise kernels, counted as memory-bound time).
Usage: python3 scripts/duty_cycle_to_catalog.py CSV [--fit-shape bf16:8192x28672x4096]
"""
import argparse
import csv
import itertools
import statistics


def cool_rates(rows):
    best = {}
    for r in rows:
        key = (r["dtype"], r["m"], r["n"], r["k"])
        best[key] = max(best.get(key, 0.0), float(r["gemm_tflops"]))
    return best


def load_of(row, cool, memory_bound_load):
    flops = 2 * int(row["m"]) * int(row["n"]) * int(row["k"])
    t_gemm = float(row["gemm_s"])
    duty = float(row["duty_measured"])
    t_fill = t_gemm * (1 - duty) / duty
    t_cool = flops / (cool * 1e12)
    # copy and swiglu: memory-bound kernels; sleep: idle; none: no filler
    weight = memory_bound_load if row["filler"] in ("copy", "swiglu") else 0.0
    return (t_cool + weight * t_fill) / (t_cool + t_fill)


def predicted_clock(load, knee, slope):
    return 1 - slope * max(0.0, load - knee)


def errors(rows, cool, p):
    out = []
    for r in rows:
        c = cool[(r["dtype"], r["m"], r["n"], r["k"])]
        measured = float(r["gemm_tflops"]) / c
        predicted = predicted_clock(load_of(r, c, p[0]), p[1], p[2])
        out.append((r, predicted / measured - 1))  # rate error; time error is about its negative
    return out


def fit(rows, cool):
    grid = lambda lo, hi, step: [lo + i * step for i in range(int(round((hi - lo) / step)) + 1)]
    best = None
    for p in itertools.product(grid(0.0, 1.0, 0.02), grid(0.3, 1.0, 0.01), grid(0.0, 1.0, 0.005)):
        sse = sum(e * e for _, e in errors(rows, cool, p))
        if best is None or sse < best[0]:
            best = (sse, p)
    return best[1]


def summary(label, errs):
    a = [abs(e) * 100 for _, e in errs]
    print(f"  {label:34s} n {len(a):2d}  median {statistics.median(a):5.1f}%  max {max(a):5.1f}%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--fit-shape", default="bf16:8192x28672x4096")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.csv)))
    cool = cool_rates(rows)
    dtype, shape = a.fit_shape.split(":")
    m, n, k = shape.split("x")
    # the fit: the shape's copy, idle and back-to-back rows; every other row judges it (the
    # swiglu rows too: a real layer's element-wise kernels in place of the copy)
    is_fit = lambda r: (r["dtype"], r["m"], r["n"], r["k"]) == (dtype, m, n, k) and r["filler"] != "swiglu"
    p = fit([r for r in rows if is_fit(r)], cool)
    print(f"# fitted by `python3 scripts/duty_cycle_to_catalog.py {a.csv} --fit-shape {a.fit_shape}`")
    print(f"power_limited_gemm: {{memory_bound_load: {p[0]:.2f}, knee_load: {p[1]:.2f}, slope: {p[2]:.3f}}}")
    print("GEMM rate error, predicted clock x cool rate against measured:")
    summary(f"fit ({a.fit_shape})", errors([r for r in rows if is_fit(r)], cool, p))
    held = [r for r in rows if not is_fit(r)]
    for key in sorted({(r["dtype"], r["m"], r["n"], r["k"], r["filler"] == "swiglu") for r in held}):
        group = [r for r in held if (r["dtype"], r["m"], r["n"], r["k"], r["filler"] == "swiglu") == key]
        summary("held out " + "%s:%sx%sx%s" % key[:4] + (" swiglu" if key[4] else ""), errors(group, cool, p))


if __name__ == "__main__":
    main()
