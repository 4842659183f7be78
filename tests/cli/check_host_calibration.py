#!/usr/bin/env python3
"""The compare flow's defaults (issue 57), from a directory outside the repository:
`cluster: host` is the calibrated host file, a calibration from another CPU model is
warned about, a hardware file can be named with --set, validate finds its suites and
refuses to judge zero cases, and --version names the revision.
Usage: check_host_calibration.py PATH_TO_TWINSIM SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

TWINSIM, SOURCE = sys.argv[1], sys.argv[2]
SCENARIO = os.path.join(SOURCE, "scenarios", "exec", "tiny-gpt-single.yaml")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def run(*args, host_file=None, cwd):
    env = dict(os.environ)
    if host_file is not None:
        env["TWINSIM_HOST_FILE"] = host_file
    return subprocess.run([TWINSIM, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def step(*args, **kw):
    r = run("simulate", SCENARIO, "--json", *args, **kw)
    check(r.returncode == 0, f"simulate {args}: {r.stderr[-300:]}")
    return json.loads(r.stdout)["time"]["step_s"] if r.returncode == 0 else None, r.stderr


with tempfile.TemporaryDirectory() as elsewhere:
    r = run("--version", cwd=elsewhere)
    check(r.returncode == 0 and r.stdout.startswith("twinsim ") and "(git " in r.stdout, f"--version: {r.stdout!r}")

    # a calibration from another CPU: the committed file with a 10 us longer kernel launch, so it shows in the step
    with open(os.path.join(SOURCE, "hardware", "calibrated", "host.yaml")) as f:
        text = f.read()
    other = os.path.join(elsewhere, "other-host.yaml")
    with open(other, "w") as f:
        f.write("# cpu_model: Some Other CPU 9000\n" + text.replace("kernel_launch_us: ", "kernel_launch_us: 1"))
    placeholder, _ = step(host_file="", cwd=elsewhere)
    calibrated, warning = step(host_file=other, cwd=elsewhere)
    by_name, _ = step("--set", "cluster=" + other, host_file="", cwd=elsewhere)
    check(calibrated == by_name, f"cluster: host with the host file {calibrated} != --set cluster=FILE {by_name}")
    check(calibrated != placeholder, f"the host file changed nothing: {calibrated} == placeholder {placeholder}")
    check("Some Other CPU 9000" in warning and "calibrate" in warning, f"no other-CPU warning: {warning!r}")
    # the same CPU model on another core layout (a larger VM of the same family, issue 61)
    here = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
    bigger = os.path.join(elsewhere, "bigger-host.yaml")
    with open(bigger, "w") as f:
        f.write(f"# cpu_model: {here}\n# cpu_layout: 640 CPUs, 2 threads per core, L3 999 MiB\n" + text)
    _, warning = step(host_file=bigger, cwd=elsewhere)
    check("640 CPUs" in warning and "calibrate" in warning, f"no other-layout warning: {warning!r}")
    _, quiet = step("--set", "cluster=" + other, host_file="", cwd=elsewhere)
    check("warning" not in quiet or "Some Other CPU" not in quiet, f"warned without cluster: host: {quiet!r}")
    r = run("simulate", SCENARIO, "--set", "cluster=" + os.path.join(elsewhere, "none.yaml"), cwd=elsewhere)
    check(r.returncode == 2 and "names no hardware file" in r.stderr, f"missing hardware file: {r.stderr!r}")

    # validate from here: the suite is found in the source tree; zero cases are refused
    r = run("validate", "--only", "no-such-case", "--out", os.path.join(elsewhere, "v"), cwd=elsewhere)
    check(r.returncode != 0 and os.path.join("validation", "host") in r.stderr and "no-such-case" in r.stderr,
          f"validate --only matching nothing: exit {r.returncode}, {r.stderr!r}")
    check("all met" not in r.stdout, "validate judged zero cases")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("host calibration checks passed")
