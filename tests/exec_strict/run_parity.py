"""`twinsim run` of one scenario on the CPU backend and on the strict-device backend
(TWINSIM_BACKEND=cpu-strict): the losses must be equal bit for bit (the same kernels on the
same bytes), and the strict run must finish at all: a host access of device memory or a
missing synchronize in the run's path ends it with SIGSEGV naming the rule.

Usage: run_parity.py TWINSIM SCENARIO RANKS MPIEXEC OUTDIR
"""
import json
import os
import shutil
import subprocess
import sys


def run(twinsim, scenario, ranks, mpiexec, out, backend, settings):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, TWINSIM_BACKEND=backend, OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [twinsim, "run", scenario, "--steps", "2", "--out", out]
    for setting in settings:  # key=value overrides of the scenario
        cmd += ["--set", setting]
    if ranks > 1:
        cmd = [mpiexec, "-np", str(ranks), "--oversubscribe", "-x", "TWINSIM_BACKEND"] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if p.returncode != 0:
        sys.exit(f"{backend}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    with open(os.path.join(out, "measured.json")) as f:
        report = json.load(f)
    return report["losses"] if "losses" in report else report["generated_tokens"]


def main():
    twinsim, scenario, ranks, mpiexec, outdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    settings = sys.argv[6:]
    cpu = run(twinsim, scenario, ranks, mpiexec, os.path.join(outdir, "cpu"), "cpu", settings)
    strict = run(twinsim, scenario, ranks, mpiexec, os.path.join(outdir, "strict"), "cpu-strict", settings)
    if not cpu or cpu != strict:
        sys.exit(f"results differ: cpu {cpu}, cpu-strict {strict}")
    print(f"ok: {len(cpu)} losses (or generated tokens) equal bit for bit on cpu and cpu-strict: {cpu}")


if __name__ == "__main__":
    main()
