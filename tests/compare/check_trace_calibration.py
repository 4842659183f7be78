#!/usr/bin/env python3
"""`twinsim calibrate --from-trace` on one public H100 trace, judged on another (issue 55).

Calibrates the H100's figures on TraceLens's trace of TimeSformer (a video transformer's
forward: big GEMMs, an unfused softmax attention, element-wise and norm kernels) and predicts
TraceLens's trace of Qwen1.5-0.5B (an LLM's forward of 16 x 559 tokens: another model, other
shapes, the same GPU) with it. Checks:
* the held-out trace's step, predicted with the fitted figures, is within 10% of its measured
  step (the GPU's ProfilerStep annotation);
* the measured figures the command reports (step, kernel time per step) and the fitted
  element-wise share of the HBM bandwidth equal what this script recomputes from the raw
  traces with its own parsing (sharing no code with compare/trace_ops.cpp);
* the fit reproduces its own trace (its sized kernels within 2%);
* the node file it writes is a cluster a scenario can name, and moves the prediction.
Usage: check_trace_calibration.py TWINSIM SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TWINSIM, ROOT = sys.argv[1], sys.argv[2]
RUNS = os.path.join(ROOT, "scenarios", "validation", "real_runs")
FIT = os.path.join(RUNS, "tracelens_h100_timesformer_rank0.json")
HELD = os.path.join(RUNS, "tracelens_h100_qwen1.5-0.5b_rank0.json")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def catalog_figure(key):
    with open(os.path.join(ROOT, "hardware", "catalog", "gpus", "h100-sxm.yaml")) as f:
        for line in f:
            m = re.match(r"^%s:\s*([0-9.]+)" % key, line)
            if m:
                return float(m.group(1))
    raise SystemExit("no %s in h100-sxm.yaml" % key)


def step_kernels(path):
    """The GPU step annotations and the kernels that start inside them, with their ops."""
    events = json.load(open(path))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("cat") == "gpu_user_annotation" and e["name"].startswith("ProfilerStep#")]
    ops = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "External id" in e["args"]}
    kernels = [(e, ops.get(e["args"].get("External id"))) for e in events
               if e.get("cat") == "kernel" and any(a <= e["ts"] < b for a, b in steps)]
    return steps, kernels


def elementwise_share(path, hbm_Bps, launch_s):
    """Bytes over time of the contiguous element-wise kernels moving at least hbm x launch bytes."""
    size = {"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "double": 8, "long int": 8, "int": 4, "bool": 1}
    total_bytes = total_s = 0.0
    for kernel, op in step_kernels(path)[1]:
        name = kernel["name"]
        if op is None or not ("vectorized_elementwise_kernel" in name or "unrolled_elementwise_kernel" in name):
            continue
        if op["name"] in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm") or "attention" in op["name"]:
            continue
        tensors = []
        for dims, kind in zip(op["args"].get("Input Dims", []), op["args"].get("Input type", [])):
            if dims and all(isinstance(d, int) for d in dims):
                n = 1
                for d in dims:
                    n *= d
                tensors.append(n * size.get(kind, 0))
        moved = sum(tensors) + max(tensors, default=0)
        if moved >= hbm_Bps * launch_s:
            total_bytes += moved
            total_s += kernel["dur"] * 1e-6
    return total_bytes / total_s / hbm_Bps


with tempfile.TemporaryDirectory() as tmp:
    node = os.path.join(tmp, "h100-from-trace.yaml")
    out = subprocess.run([TWINSIM, "calibrate", "--from-trace", FIT, "--cluster", "dgx-h100", "--judge", HELD,
                          "--out", node, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("calibrate --from-trace failed: " + out.stderr)
    report = json.loads(out.stdout)
    held = report["held_out"][0]["fitted"]
    step_error = held["step_s"]["predicted"] / held["step_s"]["measured"] - 1
    print("held-out Qwen step: %.2f ms predicted, %.2f ms measured (%+.1f%%); before the fit %+.1f%%" % (
        1e3 * held["step_s"]["predicted"], 1e3 * held["step_s"]["measured"], 100 * step_error,
        100 * (report["held_out"][0]["before"]["step_s"]["predicted"] / held["step_s"]["measured"] - 1)))
    print("%.1f%% of Qwen's sized kernel time is of kinds TimeSformer's trace has none of" % (
        100 * report["held_out"][0]["unfitted_share"]))
    before_error = report["held_out"][0]["before"]["step_s"]["predicted"] / held["step_s"]["measured"] - 1
    check(abs(step_error) < abs(before_error), "the fit predicts the held-out step better than the catalog")
    check(abs(step_error) <= 0.10, "the held-out trace's step within 10%% (%+.1f%%)" % (100 * step_error))

    for path, judged in ((FIT, report["fitted"]), (HELD, held)):
        steps, kernels = step_kernels(path)
        step_s = sum(b - a for a, b in steps) / len(steps) * 1e-6
        kernel_s = sum(k["dur"] for k, _ in kernels) * 1e-6 / len(steps)
        check(close(judged["step_s"]["measured"], step_s), "%s: measured step %.6f s" % (os.path.basename(path), step_s))
        check(close(judged["kernel_s"], kernel_s), "%s: kernel time %.6f s a step" % (os.path.basename(path), kernel_s))

    own = report["fitted"]["sized_kernel_s"]
    check(abs(own["predicted"] / own["measured"] - 1) <= 0.02, "the fit reproduces its own trace's sized kernels within 2%")
    share = elementwise_share(FIT, catalog_figure("hbm_bandwidth_GBps") * 1e9, catalog_figure("kernel_launch_us") * 1e-6)
    fitted_share = report["fit"]["memory_by_family"]["elementwise"]
    check(close(share, fitted_share, 1e-3), "element-wise share of HBM %.4f (recomputed %.4f)" % (fitted_share, share))

    scenario = os.path.join(ROOT, "scenarios", "default.yaml")
    steps = []
    for cluster in (node, "dgx-h100"):
        sim = subprocess.run([TWINSIM, "simulate", scenario, "--set", "cluster=" + cluster, "--json"],
                             capture_output=True, text=True)
        check(sim.returncode == 0, "simulate with cluster=%s runs" % os.path.basename(cluster))
        steps.append(json.loads(sim.stdout)["time"]["step_s"] if sim.returncode == 0 else 0)
    check(steps[0] != steps[1], "the calibrated node file moves the prediction (%.3f s against %.3f s)" % tuple(steps))

# the trace flags alone are refused, naming --from-trace, rather than starting a benchmark
alone = subprocess.run([TWINSIM, "calibrate", "--cluster", "dgx-h100"], capture_output=True, text=True)
check(alone.returncode != 0 and "--from-trace" in alone.stderr, "calibrate --cluster without --from-trace is refused")

if failures:
    sys.exit("%d check(s) failed" % len(failures))
