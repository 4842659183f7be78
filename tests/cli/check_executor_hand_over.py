#!/usr/bin/env python3
"""`twinsim` holds the simulator's commands and hands the executor's (run, calibrate, validate,
checkpoint) to `twinsim-executor` beside it (app/hand_over.hpp): every command keeps its name,
help and exit status, and `twinsim` links none of the executor, the kernels or the calibration,
so scripts/run-default.sh builds it alone.
Usage: check_executor_hand_over.py PATH_TO_TWINSIM SOURCE_DIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

TWINSIM, SOURCE = sys.argv[1], sys.argv[2]
EXECUTOR = os.path.join(os.path.dirname(TWINSIM), "twinsim-executor")
HANDED_OVER = ["run", "calibrate", "validate", "checkpoint"]
failures = []


def run(binary, *args, cwd=None):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def check(condition, what):
    if not condition:
        failures.append(what)


def subcommands(help_text):
    """The `name  summary` lines under Subcommands: of a --help."""
    listed = help_text.split("Subcommands:", 1)[1] if "Subcommands:" in help_text else ""
    return dict(re.findall(r"^  (\S+)\s+(.+)$", listed, re.M))


if not os.access(EXECUTOR, os.X_OK):
    print(f"no {EXECUTOR}: build the twinsim-executor target")
    sys.exit(1)

# one command line: both list every command with the same summary
front, executor = subcommands(run(TWINSIM, "--help").stdout), subcommands(run(EXECUTOR, "--help").stdout)
check(len(front) >= 16, f"twinsim --help lists {sorted(front)}")
check(front == executor, f"twinsim lists {front}, twinsim-executor {executor}")
for name in HANDED_OVER:
    check(name in front, f"twinsim --help lacks {name}")

# each executor command's help is the executor's own, under the name that was typed
for name in HANDED_OVER:
    mine, theirs = run(TWINSIM, name, "--help"), run(EXECUTOR, name, "--help")
    check(mine.returncode == 0, f"twinsim {name} --help exit {mine.returncode}: {mine.stderr}")
    check(f"Usage: {TWINSIM} {name}" in mine.stdout, f"twinsim {name} --help: usage line {mine.stdout[:200]!r}")
    check(mine.stdout.replace(TWINSIM, "PROG") == theirs.stdout.replace(EXECUTOR, "PROG"),
          f"twinsim {name} --help differs from twinsim-executor's")
check("--steps" in run(TWINSIM, "run", "--help").stdout, "twinsim run --help lacks --steps")
check("merge" in run(TWINSIM, "checkpoint", "--help").stdout, "twinsim checkpoint --help lacks merge")

# the executor's refusals come back unchanged: message and exit status
for args in [["run"], ["run", "--bogus", "x.yaml"], ["run", "no-such.yaml"], ["checkpoint", "merge"],
             ["validate", "--runs", "0"]]:
    mine, theirs = run(TWINSIM, *args), run(EXECUTOR, *args)
    check(mine.returncode != 0 and mine.returncode == theirs.returncode,
          f"{args}: twinsim exit {mine.returncode}, twinsim-executor {theirs.returncode}")
    check(mine.stderr == theirs.stderr, f"{args}: stderr {mine.stderr!r} vs {theirs.stderr!r}")

# a real run through the hand-over (one rank, two steps of the tiny GPT)
with tempfile.TemporaryDirectory() as tmp:
    r = run(TWINSIM, "run", os.path.join(SOURCE, "scenarios/exec/tiny-gpt-single.yaml"), "--steps", "2", "--out", tmp)
    check(r.returncode == 0, f"twinsim run exit {r.returncode}: {r.stderr}")
    check(os.path.exists(os.path.join(tmp, "measured.json")), "twinsim run wrote no measured.json")

# twinsim alone (no twinsim-executor beside it): the simulator works, the executor's commands
# say where they live and how to build it
with tempfile.TemporaryDirectory() as tmp:
    alone = os.path.join(tmp, "twinsim")
    shutil.copy2(TWINSIM, alone)
    r = run(alone, "simulate", "--json", cwd=tmp)
    check(r.returncode == 0 and '"step_s"' in r.stdout, f"twinsim alone: simulate exit {r.returncode}: {r.stderr}")
    for name in HANDED_OVER:
        r = run(alone, name, "--help", cwd=tmp)
        check(r.returncode == 1 and r.stdout == "", f"twinsim alone {name}: exit {r.returncode}, stdout {r.stdout!r}")
        check("runs in twinsim-executor, which is not beside" in r.stderr and "--target twinsim-executor" in r.stderr,
              f"twinsim alone {name}: stderr {r.stderr!r}")


def namespaces(binary):
    """Defined symbols of twinsim::NAME:: by NAME (nm -C)."""
    out = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        for name in re.findall(r"twinsim::(exec|kernels|calibrate)::", line):
            found.setdefault(name, []).append(line)
    return found


# what `twinsim` links: MPI's lifetime of exec/ and the machine's description of calibrate/, no more
if shutil.which("nm"):
    machine = set()  # the functions calibrate/machine.{hpp,cpp} declare or define
    for part in ["machine.hpp", "machine.cpp"]:
        with open(os.path.join(SOURCE, "calibrate", part)) as f:
            machine |= set(re.findall(r"^\S.*?\b(\w+)\(", f.read(), re.M))
    linked = namespaces(TWINSIM)
    check("kernels" not in linked, f"twinsim links kernels: {linked.get('kernels', [])[:3]}")
    stray = [s for s in linked.get("exec", []) if not re.search(r"exec::Mpi(Session|Error)\b", s)]
    check(not stray, f"twinsim links the executor: {stray[:3]}")
    stray = [s for s in linked.get("calibrate", [])
             if re.search(r"calibrate::(\(anonymous namespace\)::)?(\w+)", s).group(2) not in machine]
    check(not stray, f"twinsim links the calibration: {stray[:3]}")
    # the same look finds them in the executable that has them
    check(all(name in namespaces(EXECUTOR) for name in ["exec", "kernels", "calibrate"]),
          "twinsim-executor: nm finds no executor, kernel or calibration symbol")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("all hand-over checks passed")
