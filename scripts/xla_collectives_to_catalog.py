#!/usr/bin/env python3
"""Turn OpenXLA's measured collective table into a catalog node's `measured_busbw`.

Input: scenarios/validation/microbench/collectives_h100_b200_xla_perftable.csv, rows of
OpenXLA's default_collective_perf_table.txtpb (openxla/xla commit ad6eaee1b2f1, Apache-2.0):
`network_throughput_bytes_per_s` is the collective's tensor size (the output for
all-reduce, all-gather and all-to-all, the input for reduce-scatter: always the whole,
unsharded tensor, as twinsim counts a collective's bytes) over its median time, so
time = bytes / throughput and nccl-tests' busbw = throughput x bus factor.

With --nccl-tests-gpu NAME, the 8-GPU all-reduce comes instead from nccl-tests on that GPU
(nccl_allreduce_8gpu_a100_h100_h200_azure.csv: Azure/AI-benchmarking-guide, in-place busbw,
NCCL 2.18.5 / 2.20.5): the tool and method of the A100 curve, and NCCL's NVLS all-reduce,
which PyTorch's NCCL uses too (XLA's table reaches 398 GB/s at 1 GiB where nccl-tests
reaches 466 on H100). With --mlengineering-8gpu NAME it comes from S. Bekman's one-node
all-reduce on that GPU (nccl_allreduce_b200_1node_4node_efa_mlengineering.csv, rows with
nodes 1: torch.distributed all_reduce_bench.py, NCCL 2.27.7, NVLS; on B200 XLA's table
reaches 603 GB/s at 1 GiB, this run 723). With --mlengineering-4gpu-8gib NAME the 4-GPU
all-reduce curve gains one point at 8 GiB from S. Bekman's nccl-tests by GPU count on that
GPU (nccl_allreduce_nvls_vs_ring_by_gpucount_h200_b200_mlengineering.csv, NCCL's default
algorithm: ring at 4 GPUs): the tables above end at 1 GiB, where a 4-GPU ring is still
rising (H100 table 297 GB/s, the H200 run 363 at 8 GiB); its 5-7 GPU rows judge the group
sizes between 4 and 8, which the simulator interpolates. With --mlengineering-8gpu-16gib NAME
the 8-GPU all-gather and reduce-scatter curves gain a point at 16 GiB from S. Bekman's
nccl-tests on that GPU (nccl_collectives_h200_8gpu_16gib_mlengineering.csv; one size each,
so nothing of it is held out).

Output: YAML for `intra_node.measured_busbw`, one curve per collective and group size
(GB/s by bytes), from the FIT rows only: every other measured size (the 1st, 3rd, ...
of each group's sizes from --min-bytes up). The other rows are held out and judged by
tests/unit/validation/xla_collectives_test.cpp.

    scripts/xla_collectives_to_catalog.py --device sm_90 > /tmp/h100_busbw.yaml
"""
import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

OPS = {"all-reduce": "all_reduce", "all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
       "all-to-all": "all_to_all"}
MICROBENCH = Path(__file__).resolve().parent.parent / "scenarios/validation/microbench"
DEFAULT_CSV = MICROBENCH / "collectives_h100_b200_xla_perftable.csv"
NCCL_TESTS_CSV = MICROBENCH / "nccl_allreduce_8gpu_a100_h100_h200_azure.csv"
MLENGINEERING_CSV = MICROBENCH / "nccl_allreduce_b200_1node_4node_efa_mlengineering.csv"
BY_COUNT_CSV = MICROBENCH / "nccl_allreduce_nvls_vs_ring_by_gpucount_h200_b200_mlengineering.csv"
LARGE_CSV = MICROBENCH / "nccl_collectives_h200_8gpu_16gib_mlengineering.csv"


def bus_factor(op, n):
    # nccl-tests' bus bandwidth (PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n otherwise
    return 2.0 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def element_count(dims):
    count = 1
    for d in dims.split("x"):
        count *= int(d)
    return count


def measured_rows(path, device):
    """{(op, group size): [(bytes, seconds), ...]} sorted by bytes."""
    rows = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["xla_device_key"] != device or r["opcode"] not in OPS or r["element_type"] != "F32":
                continue
            op, n = OPS[r["opcode"]], int(r["num_devices_per_group"])
            nbytes = 4.0 * element_count(r["output_shape_dims"])
            if op == "reduce_scatter":
                nbytes *= n  # the table's size is the input: output x group size
            rows[(op, n)].append((nbytes, nbytes / float(r["network_throughput_bytes_per_s"])))
    return {k: sorted(v) for k, v in rows.items()}


def nccl_tests_rows(path, gpu):
    """[(bytes, seconds)] of the 8-GPU all-reduce rows whose gpu column starts with `gpu`."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["gpu"].startswith(gpu) and r["collective"] == "all_reduce" and int(r["gpus"]) == 8:
                nbytes = float(r["size_bytes_inferred"])
                rows.append((nbytes, bus_factor("all_reduce", 8) * nbytes / (float(r["busbw_gbps"]) * 1e9)))
    return sorted(rows)


def mlengineering_rows(path, gpu):
    """[(bytes, seconds)] of the one-node 8-GPU all-reduce rows of `gpu` (each printed twice)."""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["gpu"] == gpu and r["collective"] == "all_reduce" and int(r["nodes"]) == 1 and int(r["total_gpus"]) == 8:
                nbytes = float(r["size_bytes"])
                rows[nbytes] = bus_factor("all_reduce", 8) * nbytes / (float(r["busbw_gbps"]) * 1e9)
    return sorted(rows.items())


def by_count_point(path, gpu, gpus):
    """(bytes, seconds) of the default-algorithm all-reduce on `gpus` GPUs of `gpu`, or None."""
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["gpu"] == gpu and r["collective"] == "all_reduce" and int(r["gpus_in_collective"]) == gpus:
                nbytes = float(r["size_bytes"])
                return nbytes, bus_factor("all_reduce", gpus) * nbytes / (float(r["busbw_gbps_default"]) * 1e9)
    return None


def large_points(path, gpu):
    """{(op, 8): [(bytes, seconds)]} of the 8-GPU all-gather and reduce-scatter rows of `gpu`."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["gpu"] == gpu and int(r["gpus"]) == 8 and r["collective"] in ("all_gather", "reduce_scatter"):
                nbytes, op = float(r["size_bytes"]), r["collective"]
                out[(op, 8)] = [(nbytes, bus_factor(op, 8) * nbytes / (float(r["busbw_gbps"]) * 1e9))]
    return out


def is_fit_row(index):
    return index % 2 == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", required=True, help="xla_device_key: sm_90 (H100) or sm_100_B200")
    ap.add_argument("--csv", default=str(DEFAULT_CSV))
    ap.add_argument("--nccl-tests-gpu", help="take the 8-GPU all-reduce from nccl-tests on this GPU (e.g. H100-80GB)")
    ap.add_argument("--mlengineering-8gpu", help="take the 8-GPU all-reduce from ml-engineering's one-node run on this GPU (B200)")
    ap.add_argument("--mlengineering-4gpu-8gib", help="add ml-engineering's 8 GiB point to the 4-GPU all-reduce (H200, B200)")
    ap.add_argument("--mlengineering-8gpu-16gib", help="add ml-engineering's 16 GiB points to the 8-GPU all-gather and reduce-scatter (H200)")
    ap.add_argument("--min-bytes", type=float, default=65536, help="smallest size kept (default 64 KiB)")
    args = ap.parse_args()
    rows = measured_rows(args.csv, args.device)
    if not rows:
        sys.exit(f"no rows for device {args.device} in {args.csv}")
    if args.nccl_tests_gpu:
        rows[("all_reduce", 8)] = nccl_tests_rows(NCCL_TESTS_CSV, args.nccl_tests_gpu)
        if not rows[("all_reduce", 8)]:
            sys.exit(f"no nccl-tests rows for {args.nccl_tests_gpu} in {NCCL_TESTS_CSV}")
    if args.mlengineering_8gpu:
        rows[("all_reduce", 8)] = mlengineering_rows(MLENGINEERING_CSV, args.mlengineering_8gpu)
        if not rows[("all_reduce", 8)]:
            sys.exit(f"no one-node rows for {args.mlengineering_8gpu} in {MLENGINEERING_CSV}")
    extra = {}  # (op, n): points always kept, after the curve's own (beyond its sizes)
    if args.mlengineering_4gpu_8gib:
        point = by_count_point(BY_COUNT_CSV, args.mlengineering_4gpu_8gib, 4)
        if point is None:
            sys.exit(f"no 4-GPU row for {args.mlengineering_4gpu_8gib} in {BY_COUNT_CSV}")
        extra[("all_reduce", 4)] = [point]
    if args.mlengineering_8gpu_16gib:
        large = large_points(LARGE_CSV, args.mlengineering_8gpu_16gib)
        if not large:
            sys.exit(f"no 8-GPU rows for {args.mlengineering_8gpu_16gib} in {LARGE_CSV}")
        extra.update(large)
    print("  measured_busbw:")
    for op in OPS.values():
        groups = sorted(n for (o, n) in rows if o == op)
        if not groups:
            continue
        print(f"    {op}:")
        for n in groups:
            kept = [r for r in rows[(op, n)] if r[0] >= args.min_bytes]
            points = [(b, bus_factor(op, n) * b / t / 1e9) for i, (b, t) in enumerate(kept) if is_fit_row(i)]
            points += [(b, bus_factor(op, n) * b / t / 1e9) for b, t in extra.get((op, n), []) if b > kept[-1][0]]
            print(f"      {n}: [" + ", ".join(f"[{b:.0f}, {bw:.2f}]" for b, bw in points) + "]")


if __name__ == "__main__":
    main()
