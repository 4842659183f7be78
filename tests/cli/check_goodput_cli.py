#!/usr/bin/env python3
"""End-to-end checks of time to train under failures (sim/goodput, SCENARIO.md `goodput`):
capacity with failures included by default and what they cost, simulate's and search's
goodput objects, and the refusals. Usage: check_goodput_cli.py PATH_TO_TWINSIM SCENARIOS_DIR"""
import json
import os
import subprocess
import sys

TWINSIM, SCENARIOS = sys.argv[1], sys.argv[2]
failures = []


def run(*args):
    return subprocess.run([TWINSIM, *args], capture_output=True, text=True, timeout=120)


def check(condition, what):
    if not condition:
        failures.append(what)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


CAPACITY = ["capacity", "--model", "llama3-70b", "--gpu", "h100-sxm", "--tokens", "15e12", "--price-per-gpu-hour", "2"]

# capacity: failures included by default; the days, GPU-hours and cost include them
r = run(*CAPACITY, "--days", "30", "--json")
check(r.returncode == 0, f"capacity --json exit {r.returncode}: {r.stderr}")
c = json.loads(r.stdout)
g = c.get("goodput", {})
check("goodput" in c and "failure_free_days" in c, "capacity --json lacks goodput / failure_free_days")
if g:
    check(close(c["days"] * g["ettr"], c["failure_free_days"]), "capacity days x ettr != failure-free days")
    check(close(c["gpu_hours"], c["days"] * 24 * c["gpus"]), "capacity gpu_hours is not days x 24 x gpus")
    t = g["time_to_train"]
    check(close(t["days"], c["days"]), "goodput.time_to_train.days != capacity days")
    check(close(t["failure_gpu_hours"], (c["days"] - c["failure_free_days"]) * 24 * c["gpus"]),
          "failure_gpu_hours is not the GPU-hours beyond the failure-free run")
    check(close(t["failure_cost"], 2 * t["failure_gpu_hours"]), "failure_cost is not failure GPU-hours x price")
    check(close(sum(g["shares"].values()), 1), "goodput shares do not sum to 1")
    check(t["interruptions"] > 0, "no interruptions expected over a month on thousands of GPUs")

# --failures none: the failure-free answer, no goodput object
r = run(*CAPACITY, "--days", "30", "--json", "--failures", "none")
free = json.loads(r.stdout)
check(r.returncode == 0 and "goodput" not in free, "capacity --failures none still reports goodput")
check(close(free["days"], free["step_s"] * free["steps"] / 86400), "failure-free days are not steps x step")

# a deadline the failure-free plan meets only without failures: more GPUs with them (on the
# default stack, megatron-core: 8,192 GPUs take 28.95 days without failures, 30.09 with them)
with_f = json.loads(run(*CAPACITY, "--days", "29.5", "--json").stdout)
without = json.loads(run(*CAPACITY, "--days", "29.5", "--json", "--failures", "none").stdout)
check(with_f["feasible"] and without["feasible"], "capacity 29.5 days infeasible")
check(with_f["gpus"] > without["gpus"], f"failures did not raise the GPUs: {with_f['gpus']} vs {without['gpus']}")
check(with_f["days"] <= 29.5, "capacity with failures misses its deadline")

# the table says what failures cost
r = run(*CAPACITY, "--days", "30")
check(r.returncode == 0 and "failures included" in r.stdout and "failures cost" in r.stdout, "capacity table: " + r.stdout)
# the second published set, RSC-1's A100 fleet rate: node failures only, 6.50 per 1,000 node-days
r = run(*CAPACITY, "--days", "30", "--json", "--failures", "rsc1-a100")
rsc = json.loads(r.stdout).get("goodput", {}) if r.returncode == 0 else {}
check(rsc.get("failure_rates") == "rsc1-a100", f"capacity --failures rsc1-a100: {r.stderr}")
if rsc:
    check(close(rsc["interruptions_per_day"], rsc["nodes"] * 6.50e-3, 1e-6), "rsc1-a100 is not 6.50 per 1,000 node-days")
    check(rsc["planned_interruptions_per_day"] == 0, "rsc1-a100 publishes no planned rate")
r = run(*CAPACITY, "--days", "30", "--failures", "llama3-h10")
check(r.returncode != 0 and "rsc1-a100" in r.stderr, "an unknown --failures set is not refused with the known ones")

# refusals
for args, needle in [(CAPACITY + ["--days", "30", "--failures", "llama3-h10"], "--failures"),
                     (["capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--serve", "--rate", "1",
                       "--ttft-p99", "1", "--failures", "none"], "--failures")]:
    r = run(*args)
    check(r.returncode != 0 and needle in r.stderr, f"{args}: exit {r.returncode}, stderr {r.stderr!r}")

# simulate: the goodput object with a goodput section, and its table lines
scenario = os.path.join(SCENARIOS, "training", "llama3-405b-h100.yaml")
sets = ["--set", "goodput.failures=llama3-h100", "--set", "goodput.train_tokens=15.6e12"]
r = run("simulate", scenario, *sets, "--json")
check(r.returncode == 0, f"simulate with goodput: {r.stderr}")
s = json.loads(r.stdout)
g = s.get("goodput", {})
for key in ["failure_rates", "interruptions_per_day", "mtbf_hours", "checkpoint", "interval", "ettr", "shares",
            "time_to_train"]:
    check(key in g, f"simulate goodput lacks {key}")
if g:
    check(close(g["time_to_train"]["days"] * g["ettr"], g["time_to_train"]["failure_free_days"]),
          "simulate: days x ettr != failure-free days")
r = run("simulate", scenario, *sets)
check("effective training time" in r.stdout, "simulate table lacks the goodput lines")

# search: each ranked plan's goodput
r = run("search", scenario, *sets, "--top", "2", "--json")
check(r.returncode == 0, f"search with goodput: {r.stderr}")
top = json.loads(r.stdout)["top"] if r.returncode == 0 else []
check(bool(top) and all("goodput" in e for e in top), "search top plans lack goodput")

# an inference scenario has no training run to price
inference = os.path.join(SCENARIOS, "inference", sorted(os.listdir(os.path.join(SCENARIOS, "inference")))[0])
r = run("simulate", inference, "--set", "goodput.failures=llama3-h100")
check(r.returncode != 0 and "goodput" in r.stderr, f"goodput on inference: exit {r.returncode}, {r.stderr!r}")

for f in failures:
    print("FAIL:", f)
print(f"{'FAILED' if failures else 'passed'}")
sys.exit(1 if failures else 0)
