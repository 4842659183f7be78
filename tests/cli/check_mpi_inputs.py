#!/usr/bin/env python3
"""The processes of one MPI job given different inputs (issue 58): `mpiexec -np 1 twinsim
simulate S --fidelity full : -np 1 twinsim simulate S` once crashed in the engine's shared
link grant, and different files or --set gave a deadlock dump or a report matching neither.
Each process now compares its inputs (the scenario's keys after --set, the options given)
before any work, and all stop with a message naming the first difference. The same inputs
still run.

    check_mpi_inputs.py TWINSIM MPIEXEC SCENARIOS_DIR
"""
import os
import pathlib
import subprocess
import sys
import tempfile

TWINSIM, MPIEXEC, SCENARIOS = sys.argv[1], sys.argv[2], sys.argv[3]
DEFAULT = os.path.join(SCENARIOS, "default.yaml")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def mpmd(first, second):
    """One process running `twinsim FIRST`, the other `twinsim SECOND` (MPMD syntax)."""
    return [MPIEXEC, "--oversubscribe", "-np", "1", TWINSIM, *first, ":", "-np", "1", TWINSIM, *second]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        other = pathlib.Path(tmp, "other.yaml")
        other.write_text(pathlib.Path(DEFAULT).read_text().replace("micro_batch: 1", "micro_batch: 2"))
        cases = [
            ("different options", mpmd(["simulate", DEFAULT, "--fidelity", "full", "--json"], ["simulate", DEFAULT, "--json"]),
             "process 0 --fidelity=full, process 1 --fidelity not given"),
            ("different --set", mpmd(["simulate", DEFAULT, "--set", "plan.dp=6"], ["simulate", DEFAULT]),
             "process 0 plan.dp=6, process 1 plan.dp=12"),
            ("different files", mpmd(["simulate", DEFAULT, "--fidelity", "full"], ["simulate", str(other), "--fidelity", "full"]),
             "process 0 training.micro_batch=1, process 1 training.micro_batch=2"),
            ("search, different options", mpmd(["search", DEFAULT, "--top", "3"], ["search", DEFAULT, "--top", "4"]),
             "process 0 --top=3, process 1 --top=4"),
        ]
        for name, argv, message in cases:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=ENV)
            output = p.stdout + p.stderr
            if p.returncode == 0:
                failures.append(f"{name}: exit 0\n{output}")
            elif "the processes of this job were given different inputs: " + message not in output:
                failures.append(f"{name}: expected\n  {message}\ngot (exit {p.returncode})\n{output}")
            elif "Segmentation" in output or "deadlock" in output:
                failures.append(f"{name}: crashed or deadlocked\n{output}")
            else:
                print(f"ok  {name}: {message}")
        # the same inputs on two processes still run and report
        same = [MPIEXEC, "--oversubscribe", "-np", "2", TWINSIM, "simulate", DEFAULT, "--fidelity", "full",
                "--set", "training.global_batch=96", "--json"]
        p = subprocess.run(same, capture_output=True, text=True, timeout=300, env=ENV)
        if p.returncode != 0 or '"step_s"' not in p.stdout:
            failures.append(f"same inputs on 2 processes: exit {p.returncode}\n{p.stderr[-2000:]}")
        else:
            print("ok  same inputs on 2 processes: one report")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
