#!/usr/bin/env python3
"""Where torchtitan's judges miss: each run's missing step time per second of GEMM (and of
GEMM + attention) that `twinsim simulate --json` charges it (issue #54, s11 report 12).

A cost that is fixed per op and does not scale with the hidden size (launches, per-parameter
FSDP2 copies, the optimizer's per-tensor work, the 128k-vocabulary head) would be a larger share
of an 8B step than of a 70B or 405B one, so it would show as a larger miss per GEMM second on
the 8B runs. Usage, from the repository root after a build:

    ./build/tests/test_validation --gtest_filter='TorchtitanRuns.*' > judges.txt
    python3 scripts/torchtitan_miss_by_component.py judges.txt

The op list's rows are one micro-batch's (time_s x count); they are scaled to the step by the
stage's compute + recompute seconds over their sum (optimizer rows excluded), so PP and
gradient-accumulation runs come out in step seconds too. Collective rows (dp., tp., cp., pp.)
are left out of that sum: they run on side streams or are reported as comm.
"""
import json
import re
import subprocess
import sys

JUDGE = re.compile(r"(\S+\.yaml)\s+([\d.]+) tok/s/GPU vs\s+([\d.]+) \(\s*([+-][\d.]+)%")
GEMM_PREFIXES = ("head.logits", "attn.qkv", "attn.proj", "mlp.gate_up", "mlp.down")
COMM_PREFIXES = ("dp.param_gather", "dp.grad_reduce", "tp.", "cp.", "pp.")


def category(name):
    if name.startswith(GEMM_PREFIXES):
        return "gemm"
    if name.startswith("attn.core"):
        return "attn"
    if name.startswith("optimizer"):
        return "optim"
    if name.startswith(COMM_PREFIXES) or "_enter." in name or "_exit." in name:
        return "comm"
    return "other"  # memory-bound kernels, FSDP2's copies, the loss


def judged_runs(path):
    seen = {}
    for line in open(path):
        m = JUDGE.match(line)
        if m and m.group(1) not in seen:
            seen[m.group(1)] = float(m.group(4)) / 100
    return seen


def main(judges_path, twinsim="./build/app/twinsim", scenarios="scenarios/validation/training/"):
    print("%-50s %6s %7s %6s %5s %5s %7s %7s" % ("run", "err%", "step_s", "clock", "gemm", "attn", "miss/G", "miss/GA"))
    for scenario, err in judged_runs(judges_path).items():
        out = subprocess.run([twinsim, "simulate", scenarios + scenario, "--json"], capture_output=True, text=True)
        t = json.loads(out.stdout)["time"]
        sums = {}
        for op in t["ops"]:
            c = category(op["name"])
            sums[c] = sums.get(c, 0.0) + op["time_s"] * op["count"]
        b = t["stages"][0]["breakdown"]
        on_compute = sums.get("gemm", 0) + sums.get("attn", 0) + sums.get("other", 0)
        scale = (b["compute_s"] + b["recompute_s"]) / on_compute  # one micro-batch's rows -> the step
        gemm, attn = sums.get("gemm", 0) * scale, sums.get("attn", 0) * scale
        miss = t["step_s"] * err  # measured step = predicted step x (1 + error)
        print("%-50s %+6.1f %7.3f %6.3f %5.2f %5.2f %7.3f %7.3f" % (scenario[:50], 100 * err, t["step_s"],
              t["gemm_clock"], gemm / t["step_s"], attn / t["step_s"], miss / gemm, miss / (gemm + attn)))


if __name__ == "__main__":
    main(*sys.argv[1:])
