#!/usr/bin/env python3
"""An Nsight Systems SQLite export read by `twinsim compare` through scripts/nsys_to_trace.py.

Builds a small export by hand in NVIDIA's schema (two 1 ms steps marked by an NVTX range; in
each a 200 us GEMM on stream 7, a 150 us NCCL all-reduce on stream 20 starting 50 us before the
GEMM ends, a 10 us copy), converts it, and checks what `twinsim compare --json` measures against
values derived by hand: per step GEMM 200 us, all-reduce 150 us, exposed communication 100 us
(150 less the 50 the GEMM overlaps), idle 700 us (1000 less the kernels' union 100..400 us), step
1 ms, and a demangled name preferred to the short one. Usage: check_nsys_import.py TWINSIM SOURCE_DIR
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

TWINSIM, ROOT = sys.argv[1], sys.argv[2]
failures = []
US = 1000  # ns


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def near(got, want):
    return abs(got - want) <= 1e-9 + 1e-6 * abs(want)


def make_export(path):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
            streamId INT NOT NULL, correlationId INT, shortName INT NOT NULL, demangledName INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
            streamId INT NOT NULL, bytes INT);
        CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, text TEXT, textId INT);
    """)
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [
        (1, "sm90_xmma_gemm"), (2, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
        (3, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), (4, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)"),
        (5, "train_step")])
    for step in range(2):
        t0 = step * 1000 * US
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?, 1, 2)",
                   (t0 + 100 * US, t0 + 300 * US, 10 * step + 1))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 20, ?, 3, 4)",
                   (t0 + 250 * US, t0 + 400 * US, 10 * step + 2))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 7, 1048576)", (t0 + 500 * US, t0 + 510 * US))
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, 5)", (t0, t0 + 1000 * US))
    db.commit()
    db.close()


with tempfile.TemporaryDirectory() as tmp:
    export, trace, sim = (os.path.join(tmp, n) for n in ("run.sqlite", "run.json", "sim.json"))
    make_export(export)
    conv = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "nsys_to_trace.py"), export, trace,
                           "--step-range", "train_step"], capture_output=True, text=True)
    check(conv.returncode == 0, "nsys_to_trace.py converts the export: " + conv.stdout.strip() + conv.stderr.strip())
    names = {e["name"] for e in json.load(open(trace))["traceEvents"] if e["cat"] == "kernel"}
    check("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64" in names, "the demangled name is kept")
    simulated = subprocess.run([TWINSIM, "simulate", os.path.join(ROOT, "scenarios", "default.yaml"), "--json"],
                               capture_output=True, text=True)
    open(sim, "w").write(simulated.stdout)
    r = subprocess.run([TWINSIM, "compare", sim, trace, "--json"], capture_output=True, text=True)
    check(r.returncode == 0, "twinsim compare reads the converted trace " + r.stderr.strip())
    if r.returncode == 0:
        got = json.loads(r.stdout)
        check(near(got["step_s"]["measured"], 1e-3), "step 1 ms (%g)" % got["step_s"]["measured"])
        check(near(got["categories"]["gemm"]["measured"], 200e-6), "GEMM 200 us a step")
        check(near(got["collectives_s"]["communication.all_reduce"], 150e-6), "all-reduce 150 us a step")
        check(near(got["exposed_comm_s"]["measured"], 100e-6), "exposed communication 100 us a step")
        check(near(got["idle_s"]["measured"], 700e-6), "idle 700 us a step (%g)" % got["idle_s"]["measured"])
        check(near(got["categories"]["memcpy_memset"]["measured"], 10e-6), "copies 10 us a step")
        check(not got["unknown_kernels"], "no unknown kernel")

if failures:
    sys.exit("%d check(s) failed" % len(failures))
