#!/usr/bin/env python3
"""`twinsim compare --plot` from an installed binary: `cmake --install` into a prefix whose
name holds a space and a quote, then the installed binary, run from an unrelated directory,
plots into a prefix with a space and a quote. The plotting script must be found beside the
binary (PREFIX/share/twinsim), not through the working directory or the source tree, and
the paths must reach it whole (no shell between). Usage:
check_installed_plot.py BUILD_DIR SCENARIO MEASURED_DIR [--set K=V]..."""
import os
import shutil
import subprocess
import sys
import tempfile

BUILD_DIR, SCENARIO, MEASURED_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
OVERRIDES = sys.argv[4:]

tmp = tempfile.mkdtemp(prefix="twinsim_installed_")
try:
    prefix = os.path.join(tmp, "in stall 'q")
    r = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cmake --install failed: {r.stdout}{r.stderr}")
    twinsim = os.path.join(prefix, "bin", "twinsim")
    script = os.path.join(prefix, "share", "twinsim", "plot_compare.py")
    if not os.path.isfile(twinsim) or not os.path.isfile(script):
        sys.exit(f"the install lacks {twinsim} or {script}")

    elsewhere = os.path.join(tmp, "unrelated dir")
    os.makedirs(elsewhere)
    env = {k: v for k, v in os.environ.items() if k != "TWINSIM_PLOT_SCRIPT"}

    def run(*args):
        r = subprocess.run([twinsim, *args], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=120)
        if r.returncode != 0:
            sys.exit(f"installed twinsim {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r.stdout

    # the executor's commands reach twinsim-executor, installed beside it (app/hand_over.hpp)
    if "--steps" not in run("run", "--help"):
        sys.exit("installed twinsim run --help: not the executor's help")
    sim_path = os.path.join(elsewhere, "simulated.json")
    with open(sim_path, "w") as f:
        f.write(run("simulate", SCENARIO, *OVERRIDES, "--json"))
    plots = os.path.join(tmp, "plots; it's here")
    os.makedirs(plots)
    out = os.path.join(plots, "c'mp x")
    run("compare", sim_path, os.path.join(MEASURED_DIR, "measured.json"), "--plot", out)
    missing = [out + s for s in ("_ops.png", "_memory.png") if not os.path.getsize(out + s) > 1000]
    if missing:
        sys.exit(f"no plot {missing}")
    # the quote ended no command: nothing was written outside the plot prefix's folder
    stray = [n for n in os.listdir(tmp) if n not in ("in stall 'q", "unrelated dir", "plots; it's here")]
    if stray:
        sys.exit(f"files outside the prefix: {stray}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("compare --plot from the installed binary: passed")
