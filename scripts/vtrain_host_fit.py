#!/usr/bin/env python3
"""Fit the Megatron stacks' host figures (hardware/catalog/stacks/megatron-eager.yaml:
host_op_us, host_microbatch_us) on vTrain's measured Megatron-DeepSpeed iterations, and show
what the rows say about a micro-batch's time outside its layers.

1. Decomposition. vTrain's 1,440 rows come in groups that share everything but the layer count
   L and the number of micro-batches n (tp, hidden, micro-batch, pp, dp). Within a group the
   iteration time is fitted, by least squares, as
       T = a + b L/pp + n (c + e L/pp)
   e: a layer's forward, recompute and backward for one micro-batch on a stage; c: what a
   micro-batch costs the slowest stage beside its layers (embedding, output layer, loss, the
   schedule's own time). The same fit of twinsim's predicted times shows where the model
   parts from the measurement. Printed per (tp, hidden, micro-batch), averaged over its groups.
2. Scan. Every (host_op_us, host_microbatch_us) pair of the grid runs `twinsim validate-csv`
   on all rows; the pair with the least mean |error| on the even rows is the fit, the odd rows
   judge it (the split the catalog's figures keep).

    python3 scripts/vtrain_host_fit.py build/app/twinsim [--csv FILE] [--decompose-only]
"""
import argparse
import itertools
import json
import os
import statistics
import subprocess
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CSV = os.path.join(ROOT, "scenarios", "validation", "vtrain", "vtrain_single_node_a100.csv")
HOST_OP_US = [100, 105, 110, 115, 120]
HOST_MICROBATCH_US = [0, 1500, 2000, 2500, 3000, 3500, 4000]


def validate(twinsim, csv_path, half="all", rows=False, host_op_us=None, host_microbatch_us=None):
    """`twinsim validate-csv`'s JSON for one half of the rows, under the catalog stack or the given figures."""
    cmd = [twinsim, "validate-csv", csv_path, "--cluster", "dgx-a100-80gb", "--eval-half", half, "--json"]
    if rows:
        cmd.append("--rows")
    if host_op_us is not None:
        cmd += ["--stack", f"{{preset: megatron-eager, host_op_us: {host_op_us}, "
                           f"host_microbatch_us: {host_microbatch_us}}}"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def least_squares(rows, n):
    """x minimising |A x - y| over rows (A's row, y) of n columns: the normal equations by Gauss-Jordan."""
    ata = [[sum(r[i] * r[j] for r, _ in rows) for j in range(n)] for i in range(n)]
    aty = [sum(r[i] * y for r, y in rows) for i in range(n)]
    m = [row + [v] for row, v in zip(ata, aty)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [a - f * b for a, b in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def decompose(rows, key):
    """Per group of rows alike but for L and n: (c, e) in ms from T = a + b L/pp + n (c + e L/pp)."""
    groups = defaultdict(list)
    for r in rows:
        n = r["global_batch"] // (r["micro_batch"] * r["dp"])
        groups[(r["tp"], r["hidden"], r["micro_batch"], r["pp"], r["dp"])].append((r, n))
    out = defaultdict(list)
    for (tp, hidden, mb, pp, dp), members in groups.items():
        if len({r["layers"] for r, _ in members}) < 2 or len({n for _, n in members}) < 2:
            continue
        design = [([1.0, r["layers"] / pp, n, n * r["layers"] / pp], r[key] * 1e3) for r, n in members]
        _, _, c, e = least_squares(design, 4)
        out[(tp, hidden, mb)].append((c, e))
    return {k: (statistics.mean(c for c, _ in v), statistics.mean(e for _, e in v), len(v)) for k, v in out.items()}


def figures(summary):
    """mean, median, p90 and max |error| of a validate-csv summary, in %."""
    return " ".join(f"{100 * summary[k]:5.2f}" for k in ("mean", "median", "p90", "max"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("twinsim")
    ap.add_argument("--csv", default=CSV)
    ap.add_argument("--decompose-only", action="store_true")
    args = ap.parse_args()

    rows = validate(args.twinsim, args.csv, rows=True)["rows"]
    measured, predicted = decompose(rows, "measured_s"), decompose(rows, "predicted_s")
    print("per micro-batch outside its layers (c) and per layer (e), ms, catalog stack; measured / predicted")
    for k in sorted(measured):
        (cm, em, groups), (cp, ep, _) = measured[k], predicted[k]
        print(f"  tp{k[0]} h{k[1]:<5d} mb{k[2]}: c {cm:6.2f} / {cp:6.2f}   e {em:6.3f} / {ep:6.3f}   ({groups} groups)")
    if args.decompose_only:
        return

    print("\nscan: mean / median / p90 / max |error| in %, even rows (fit) | odd rows (judge)")
    results = []
    for op_us, mb_us in itertools.product(HOST_OP_US, HOST_MICROBATCH_US):
        # validate-csv's own summary of each half (sim/validate/error_stats.hpp)
        even, odd = (validate(args.twinsim, args.csv, half, False, op_us, mb_us)["overall"] for half in ("even", "odd"))
        results.append((even["mean"], op_us, mb_us, even, odd))
        print(f"  {op_us:4d} us/op {mb_us:5d} us/micro-batch: {figures(even)} | {figures(odd)}")
    _, op_us, mb_us, even, odd = min(results)
    print(f"\nfit: host_op_us: {op_us}, host_microbatch_us: {mb_us} "
          f"(even rows mean {100 * even['mean']:.2f}%, median {100 * even['median']:.2f}%; odd rows mean "
          f"{100 * odd['mean']:.2f}%, median {100 * odd['median']:.2f}%, p90 {100 * odd['p90']:.1f}%)")


if __name__ == "__main__":
    main()
