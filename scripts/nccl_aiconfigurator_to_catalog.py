#!/usr/bin/env python3
"""Writes one-node measured_busbw curves into catalog nodes from aiconfigurator's nccl-tests rows.

Reads scenarios/validation/microbench/nccl_intranode_aiconfigurator.csv (nccl-tests out-of-place
times, fp16) and rewrites the `measured_busbw` block of each named GPU's node: the fit sizes are
2 KiB x 4^k (2 KiB .. 512 MiB); the 1 KiB x 4^k sizes are held out
(tests/unit/validation/nccl_aiconfigurator_test.cpp). busbw = nccl-tests' bus factor x bytes /
time (2(n-1)/n for all-reduce, (n-1)/n for the others). The DGX A100's all-reduce (vTrain's
curves) is copied verbatim; points of 2 GiB and more already in a curve (other nccl-tests runs)
are kept.

Usage: scripts/nccl_aiconfigurator_to_catalog.py a100[,h100,h200,b200]
"""
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "scenarios/validation/microbench/nccl_intranode_aiconfigurator.csv"
NODES = {"a100": "dgx-a100-80gb", "h100": "dgx-h100", "h200": "dgx-h200", "b200": "dgx-b200"}
YAML_OP = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
           "alltoall": "all_to_all"}
FIT_SIZES = {2048 * 4**k for k in range(10)}


def bus_factor(op, n):
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def fitted_curves():
    curves = {}
    for r in csv.DictReader(open(CSV)):
        size = int(r["bytes"])
        if size not in FIT_SIZES:
            continue
        n, op = int(r["gpus"]), YAML_OP[r["op"]]
        busbw = bus_factor(op, n) * size / (float(r["time_us"]) * 1e-6) / 1e9
        curves.setdefault((r["gpu"], op), {}).setdefault(n, []).append((size, busbw))
    return curves


def rewrite(gpu, curves):
    path = ROOT / "hardware/catalog/nodes" / (NODES[gpu] + ".yaml")
    lines = path.read_text().split("\n")
    start = next(i for i, l in enumerate(lines) if l.strip() == "measured_busbw:")
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    old, raw, op = {}, {}, None
    for line in lines[start + 1:end]:
        header = re.match(r"^    (\w+):\s*$", line)
        if header:
            op = header.group(1)
            old[op] = {}
            continue
        m = re.match(r"^      (\d+): (\[.*\])\s*$", line)
        old[op][int(m.group(1))] = eval(m.group(2))
        raw[(op, int(m.group(1)))] = line
    block = ["  measured_busbw:"]
    for op in ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]:
        block.append(f"    {op}:")
        for n in [2, 4, 8]:
            if gpu == "a100" and op == "all_reduce":
                block.append(raw[(op, n)])
                continue
            points = sorted(curves[(gpu, op)][n]) + [p for p in old.get(op, {}).get(n, []) if p[0] >= 2**31]
            block.append(f"      {n}: [" + ", ".join(f"[{int(b)}, {v:.4g}]" for b, v in points) + "]")
    path.write_text("\n".join(lines[:start] + block + lines[end:]))


if __name__ == "__main__":
    curves = fitted_curves()
    for gpu in sys.argv[1].split(","):
        rewrite(gpu, curves)
