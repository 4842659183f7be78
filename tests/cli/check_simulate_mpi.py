#!/usr/bin/env python3
"""`mpirun -np N twinsim simulate --fidelity full` splits the step's simulation over N
processes (sim/engine/simulator.hpp): its report and its trace must be the single
process's, byte for byte, on 2 and 4 processes.
Usage: check_simulate_mpi.py TWINSIM MPIEXEC SCENARIOS_DIR"""
import os
import subprocess
import sys
import tempfile

TWINSIM, MPIEXEC, SCENARIOS = sys.argv[1], sys.argv[2], sys.argv[3]
# Llama 3 405B (TP 8, PP 16, interleaved) on 1,024 H100s behind a 2:1 oversubscribed spine
# with 4 nodes per leaf: the fold keeps 512 GPUs, whose pipeline transfers and DP
# collectives queue for the leaves' uplinks; its trace is large, so it is compared on
# Mixtral 8x7B (expert parallelism) instead
LLAMA = ["simulate", os.path.join(SCENARIOS, "training", "llama3-405b-h100.yaml"), "--fidelity", "full",
         "--set", "cluster.fabric.oversubscription=2", "--set", "cluster.fabric.nodes_per_leaf=4",
         "--set", "plan.dp=8", "--set", "training.global_batch=128", "--json"]
MIXTRAL = ["simulate", os.path.join(SCENARIOS, "training", "mixtral-8x7b-h100.yaml"), "--fidelity", "full", "--json"]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(prefix, args, trace=None):
    command = [*prefix, TWINSIM, *args] + (["--trace", trace] if trace else [])
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed: {done.stderr}")
    if not trace:
        return done.stdout, b""
    with open(trace, "rb") as f:
        return done.stdout, f.read()


with tempfile.TemporaryDirectory() as tmp:
    for args, traced in ((LLAMA, False), (MIXTRAL, True)):
        report, trace = run([], args, os.path.join(tmp, "one.json") if traced else None)
        if not traced and '"simulated_gpus": 512' not in report:
            sys.exit("expected the fold to keep 512 GPUs:\n" + report[:400])
        for n in (2, 4):
            split = run([MPIEXEC, "-np", str(n), "--oversubscribe"], args,
                        os.path.join(tmp, f"{n}.json") if traced else None)
            if split[0] != report:
                sys.exit(f"{args[1]}: the report on {n} processes differs from the single process's")
            if split[1] != trace:
                sys.exit(f"{args[1]}: the trace on {n} processes differs from the single process's")
        print(f"{os.path.basename(args[1])}: identical reports{' and traces' if traced else ''} on 1, 2 and 4 processes")
