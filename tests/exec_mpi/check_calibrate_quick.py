#!/usr/bin/env python3
"""`twinsim calibrate --quick` end to end: it writes a hardware file the simulator takes as
a scenario's cluster, and raw points with the communicator sweep
(every collective at every size, each call timed after the caches were taken by other
work). Run from the repository root.
Usage: check_calibrate_quick.py TWINSIM OUT_DIR"""
import json
import os
import subprocess
import sys

TWINSIM, OUT = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)
yaml_path = os.path.join(OUT, "quick.yaml")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


r = subprocess.run([TWINSIM, "calibrate", "--quick", "--repeats", "2", "--comm-evict", "2", "--out", yaml_path],
                   capture_output=True, text=True, timeout=600)
if r.returncode != 0:
    print(r.stdout, r.stderr)
    sys.exit("calibrate failed")
with open(os.path.join(OUT, "quick.json")) as f:
    points = json.load(f)

check(len(points["gemm"]) > 0 and all(p["seconds"]["median_s"] > 0 for p in points["gemm"]), "GEMM points")
comm = [p for p in points["comm"] if p["ranks"] == 2]
ops = sorted({p["op"] for p in comm})
check(ops == ["all_gather", "all_reduce", "all_to_all", "reduce_scatter", "send_recv"], f"ops {ops}")
for op in ops:
    # the fastest of each point's calls: a call whose rank was descheduled (other tests
    # share the cores) takes milliseconds whatever its size
    by_size = sorted((p["bytes"], p["seconds"]["min_s"]) for p in comm if p["op"] == op)
    check(len(by_size) == 3 and all(t > 0 for _, t in by_size), f"{op}: {by_size}")
    # 4 MiB cannot move as fast as 4 KiB: a sweep that timed nothing would not see it
    check(by_size[-1][1] > by_size[0][1], f"{op}: 4 MiB in {by_size[-1][1]} s, 4 KiB in {by_size[0][1]} s")
    check(all(p["seconds"]["repeats"] == 6 for p in comm if p["op"] == op), f"{op}: 3 x 2 single calls per point")

with open(yaml_path) as f:
    cluster = f.read()
# issue 61's components: the offload's CPU AdamW and out-of-cache copies, the int8
# compressor's curve, the MoE all-to-all's own curve
host = [line for line in cluster.splitlines() if line.startswith("host:")]
check(len(host) == 1 and "adam_ns_per_param:" in host[0], f"host line {host}")
check("\n    quantize:\n" in cluster, "kernel_efficiency.quantize")
check("\n    all_to_all:\n" in cluster, "efficiency_by_op.all_to_all")
check(any(p["kernel"] == "host_copy" for p in points["memory"]), "host_copy points")
# the decode's re-used weights: the reuse sweep's working sets and the cached GEMM points, and
# cache_MiB the half-way set (at most the sysfs L3 the header's cpu_layout names)
reuse = sorted((p["bytes"], p["seconds"]["median_s"]) for p in points["memory"] if p["kernel"] == "gemm_reuse")
check(len(reuse) == 3 and all(t > 0 for _, t in reuse), f"gemm_reuse points {reuse}")
check(any(p["kernel"] == "gemm_cached" for p in points["memory"]), "gemm_cached points")
cache = [float(line.split(":")[1]) for line in cluster.splitlines() if line.startswith("  cache_MiB:")]
check(len(cache) == 1 and 0 < cache[0] <= reuse[-1][0] / 1048576, f"cache_MiB {cache}")
s = subprocess.run([TWINSIM, "simulate", "scenarios/validation/host/gpt-dp2-zero1.yaml", "--json", "--set",
                    "cluster=" + cluster], capture_output=True, text=True, timeout=120)
check(s.returncode == 0, f"simulate with the calibrated cluster: {s.stderr[-500:]}")
if s.returncode == 0:
    report = json.loads(s.stdout)
    check(report["time"]["step_s"] > 0, f"step {report['time'].get('step_s')}")

if failures:
    print(r.stderr[-3000:])
    print("\n".join(failures))
    sys.exit(1)
print("calibrate --quick checks passed")
