#!/usr/bin/env python3
"""Every JSON report the CLI writes carries schema_version 1 (models/report_schema.hpp), and
the default scenario's simulated report is what it was when versioning began, less
schema_version (tests/cli/golden/default_simulate.json, issue #18): a change that moves it
must be meant, and the golden file rewritten with --update (saying why in the commit).
Usage: check_report_schema.py TWINSIM SOURCE_DIR [--update]"""
import json
import math
import os
import subprocess
import sys
import tempfile

TWINSIM, ROOT = sys.argv[1], sys.argv[2]
UPDATE = "--update" in sys.argv[3:]
GOLDEN = os.path.join(ROOT, "tests", "cli", "golden", "default_simulate.json")
failures = []


def run_json(*args):
    r = subprocess.run([TWINSIM, *args, "--json"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    if r.returncode != 0:
        failures.append(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return {}
    return json.loads(r.stdout)


def close(a, b, path="report"):
    """Differences between two JSON values, numbers within 1e-9 relative."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only in the golden file" for k in a.keys() - b.keys()]
        out += [f"{path}.{k}: new" for k in b.keys() - a.keys()]
        for k in a.keys() & b.keys():
            out += close(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items in the golden file, {len(b)} now"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in close(x, y, f"{path}[{i}]")]
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15) else [f"{path}: {a} then, {b} now"]
    return [] if a == b else [f"{path}: {a!r} then, {b!r} now"]


default = run_json("simulate", "scenarios/default.yaml")
inference = "scenarios/inference/llama2-7b-a100.yaml"
reports = {
    "simulate": default,
    "memory": run_json("memory", "scenarios/default.yaml"),
    "simulate (inference)": run_json("simulate", inference),
    "serve": run_json("serve", inference, "--requests", "20", "--rate", "2"),
    "search": run_json("search", "scenarios/default.yaml", "--top", "2", "--analytic-only"),
    "capacity --serve": run_json("capacity", "--serve", "--model", "llama3-8b", "--gpu", "h100-sxm", "--rate", "1",
                                 "--ttft-p99", "10"),
}
with tempfile.TemporaryDirectory() as tmp:
    sim = os.path.join(tmp, "sim.json")
    with open(sim, "w") as f:
        json.dump(default, f)
    reports["compare"] = run_json("compare", sim, sim)
    out = os.path.join(tmp, "run")
    r = subprocess.run([TWINSIM, "run", "scenarios/exec/tiny-gpt-single.yaml", "--steps", "1", "--out", out],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    if r.returncode != 0:
        failures.append(f"run: exit {r.returncode}: {r.stderr.strip()}")
    else:
        with open(os.path.join(out, "measured.json")) as f:
            reports["run (measured.json)"] = json.load(f)
    # a report from a newer twinsim is refused, naming the version
    newer = os.path.join(tmp, "newer.json")
    with open(newer, "w") as f:
        json.dump({**default, "schema_version": 2}, f)
    r = subprocess.run([TWINSIM, "compare", newer, sim], capture_output=True, text=True)
    if r.returncode == 0 or "schema_version 2 is not one this twinsim reads" not in r.stderr:
        failures.append(f"compare of a schema_version 2 report: exit {r.returncode}, {r.stderr.strip()!r}")
for name, report in reports.items():
    if report and report.get("schema_version") != 1:
        failures.append(f"{name}: schema_version {report.get('schema_version')!r}, expected 1")

now = {k: v for k, v in default.items() if k != "schema_version"}
if UPDATE:
    with open(GOLDEN, "w") as f:
        json.dump(now, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {GOLDEN}")
else:
    with open(GOLDEN) as f:
        golden = json.load(f)
    diffs = close(golden, now)
    failures += [f"default scenario's report moved: {d}" for d in diffs[:20]]

for f in failures:
    print("FAIL", f)
print(f"{len(reports)} reports checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
