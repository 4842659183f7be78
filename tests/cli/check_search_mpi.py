#!/usr/bin/env python3
"""`mpirun -np 2 twinsim search ...` splits the plan space over ranks and merges the
result: it must equal the single-process search (timings aside).
Usage: check_search_mpi.py TWINSIM MPIEXEC"""
import json
import os
import subprocess
import sys

TWINSIM, MPIEXEC = sys.argv[1], sys.argv[2]
ARGS = ["search", "--set", "model=llama2-13b", "--set", "training.seq_len=4096", "--set", "plan.tp=1",
        "--set", "plan.pp=1", "--set", "plan.dp=8", "--set", "plan.sequence_parallel=false",
        "--set", "training.global_batch=512", "--gpus", "64", "--top", "5", "--json"]
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def without_timings(report):
    return {k: v for k, v in report.items() if not k.endswith("_s")}


single = subprocess.run([TWINSIM, *ARGS], capture_output=True, text=True, timeout=300, env=env)
multi = subprocess.run([MPIEXEC, "-np", "2", "--oversubscribe", TWINSIM, *ARGS], capture_output=True, text=True,
                       timeout=300, env=env)
if single.returncode or multi.returncode:
    sys.exit(f"search failed: {single.stderr}\n{multi.stderr}")
a, b = without_timings(json.loads(single.stdout)), without_timings(json.loads(multi.stdout))
if a != b:
    sys.exit("the 2-rank search differs from the single-process one:\n" +
             "\n".join(k for k in a if a[k] != b.get(k)))
print(f"identical: {a['candidates']} candidates, {len(a['top'])} top plans")
