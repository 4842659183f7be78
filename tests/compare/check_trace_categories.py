#!/usr/bin/env python3
"""`twinsim compare SIM.json TRACE` against the raw profiler traces, recomputed here.

For each public trace of scenarios/validation/real_runs/ this script reads the raw Chrome
trace JSON and compare/kernel_categories.csv itself (its own parsing, matching and interval
arithmetic, sharing no code with compare/kineto_trace.cpp) and checks what `twinsim compare
--json` reports: every category's seconds per step, each collective's, the exposed
communication, the idle time, the mean ProfilerStep and the unknown kernels, which must all
be listed. Usage: check_trace_categories.py TWINSIM SOURCE_DIR
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TWINSIM, ROOT = sys.argv[1], sys.argv[2]
TRACES = ["hta_nccl_data_a100_ddp_rank0.json", "hta_trace_filter_sampled_rank0.json",
          "tracelens_h100_qwen1.5-0.5b_rank0.json", "tracelens_h100_timesformer_rank0.json"]
failures = []


def read_table():
    rules = []
    with open(os.path.join(ROOT, "compare", "kernel_categories.csv")) as f:
        next(f)
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            side, pattern, category = line.split(",")
            if side == "kernel":
                rules.append((pattern.lower().split("&"), category))
    return rules


def category(rules, name):
    lowered = name.lower()
    for words, cat in rules:
        if all(w in lowered for w in words):
            return cat
    return "unknown"


def union(spans):
    total, end, begin = 0.0, -math.inf, 0.0
    for b, e in sorted(spans):
        if b > end:
            total += max(0.0, end - begin) if end > -math.inf else 0.0
            begin, end = b, e
        else:
            end = max(end, e)
    if end > -math.inf:
        total += end - begin
    return total


def expected(trace, rules):
    events = trace["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e and "ts" in e]
    per_device = {}
    for e in gpu:
        d = e.get("args", {}).get("device", 0)
        per_device[d] = per_device.get(d, 0.0) + e["dur"]
    device = max(per_device, key=per_device.get)
    gpu = [e for e in gpu if e.get("args", {}).get("device", 0) == device]
    steps = [e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"]
    n = max(1, len(steps))
    cats, unknown = {}, set()
    for e in gpu:
        c = category(rules, e["name"])
        cats[c] = cats.get(c, 0.0) + e["dur"] * 1e-6 / n
        if c == "unknown":
            unknown.add(e["name"])
    sm = [(e["ts"], e["ts"] + e["dur"]) for e in gpu if e["cat"] == "kernel"]
    compute = [(e["ts"], e["ts"] + e["dur"]) for e in gpu
               if e["cat"] == "kernel" and not category(rules, e["name"]).startswith("communication")]
    starts = [e["ts"] for e in gpu] + [s["ts"] for s in steps]
    ends = [e["ts"] + e["dur"] for e in gpu] + [s["ts"] + s["dur"] for s in steps]
    window = (max(ends) - min(starts)) * 1e-6
    busy = union(sm) * 1e-6 / n
    return {
        "categories": cats,
        "exposed": (union(sm) - union(compute)) * 1e-6 / n,
        "idle": window / n - busy,
        "step": sum(s["dur"] for s in steps) * 1e-6 / len(steps) if steps else None,
        "unknown": unknown,
    }


def near(what, got, want, rel=1e-6):
    if not math.isclose(got, want, rel_tol=rel, abs_tol=1e-9):
        failures.append(f"{what}: twinsim {got}, recomputed {want}")


def check(trace_file, sim):
    path = os.path.join(ROOT, "scenarios", "validation", "real_runs", trace_file)
    with open(path) as f:
        want = expected(json.load(f), read_table())
    r = subprocess.run([TWINSIM, "compare", sim, path, "--json"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        failures.append(f"{trace_file}: exit {r.returncode}: {r.stderr.strip()}")
        return
    got = json.loads(r.stdout)
    tops = {}
    for cat, s in want["categories"].items():
        tops[cat.split(".")[0]] = tops.get(cat.split(".")[0], 0.0) + s
        if cat.startswith("communication."):
            near(f"{trace_file} {cat}", got["collectives_s"].get(cat, 0.0), s)
    for cat, s in tops.items():
        near(f"{trace_file} {cat}", got["categories"][cat]["measured"], s)
    near(f"{trace_file} exposed communication", got["exposed_comm_s"]["measured"], want["exposed"])
    near(f"{trace_file} idle", got["idle_s"]["measured"], want["idle"])
    if want["step"] is not None:
        near(f"{trace_file} step", got["step_s"]["measured"], want["step"])
    listed = {k["name"] for k in got["unknown_kernels"]}
    if listed != want["unknown"]:
        failures.append(f"{trace_file}: unknown kernels listed {sorted(listed)[:3]}..., recomputed {sorted(want['unknown'])[:3]}...")
    total = sum(want["categories"].values())
    print(f"{trace_file}: {len(want['categories'])} categories, {total:.4f} s of kernels per step, "
          f"{want['categories'].get('unknown', 0.0) / total:.1%} unknown ({len(want['unknown'])} names), "
          f"exposed communication {want['exposed']:.4f} s, idle {want['idle']:.4f} s, step {want['step']}")


with tempfile.TemporaryDirectory() as tmp:
    sim = os.path.join(tmp, "sim.json")
    with open(sim, "w") as f:
        r = subprocess.run([TWINSIM, "simulate", os.path.join(ROOT, "scenarios", "default.yaml"), "--json"],
                           stdout=f, text=True, timeout=300)
    if r.returncode != 0:
        failures.append("simulate failed")
    else:
        for t in TRACES:
            check(t, sim)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
