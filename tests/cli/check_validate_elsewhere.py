#!/usr/bin/env python3
"""`twinsim validate` from a directory outside the repository (issue 57): it finds the host
suite in the source tree, simulates, runs and compares one real case, writes only under
--out, and refuses a suite it cannot find, naming where it looked. One single-rank case, one
run of 3 steps: a few seconds; no timing is judged (the step error depends on the machine's load).
Usage: check_validate_elsewhere.py PATH_TO_TWINSIM"""
import json
import os
import subprocess
import sys
import tempfile

TWINSIM = sys.argv[1]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def validate(*args, cwd):
    return subprocess.run([TWINSIM, "validate", *args], capture_output=True, text=True, timeout=240, env=ENV,
                          cwd=cwd)


with tempfile.TemporaryDirectory() as elsewhere:
    out = os.path.join(elsewhere, "out")
    r = validate("--only", "gpt-single", "--runs", "1", "--steps", "3", "--out", out, "--json", cwd=elsewhere)
    check(r.returncode == 0, f"validate --only gpt-single: exit {r.returncode}, {r.stderr[-500:]!r}")
    cases = json.loads(r.stdout) if r.returncode == 0 else []
    # --only is a substring match: gpt-single is the one host case whose name holds it
    check([c.get("name") for c in cases] == ["gpt-single"], f"cases judged: {[c.get('name') for c in cases]}")
    for case in cases:
        runs = case.get("measured_runs_s", [])
        check(len(runs) == 1 and runs[0] > 0, f"measured runs: {runs}")
        step = case["comparison"]["step_s"]
        check(step["predicted"] > 0 and step["measured"] == runs[0], f"step compared: {step}")
        # parameters are counted, not timed: the memory model and the tracked allocator agree to the byte
        params = case["comparison"]["memory"]["breakdown"]["params"]
        check(params["predicted"] == params["measured"] > 0, f"params bytes: {params}")
    for name in ("scenario.yaml", "simulated.json", "measured.json", "comparison.json"):
        check(os.path.isfile(os.path.join(out, "gpt-single", name)), f"validate wrote no {name} under --out")
    check(sorted(os.listdir(elsewhere)) == ["out"], f"validate wrote into its working directory: {os.listdir(elsewhere)}")

    # a suite that exists nowhere is refused, naming it
    r = validate("--suite", "no-such-suite", "--out", out, cwd=elsewhere)
    check(r.returncode != 0 and "no-such-suite" in r.stderr, f"validate --suite no-such-suite: exit {r.returncode}, "
                                                             f"{r.stderr[-300:]!r}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("validate from another directory: checks passed")
