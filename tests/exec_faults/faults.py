#!/usr/bin/env python3
"""Executor faults and determinism through `mpirun -np 2 twinsim run` (issue 9).

    faults.py CASE MPIEXEC TWINSIM SCENARIO WORKDIR

Each case runs tiny-gpt (seq 32, global batch 4) on two ranks and asserts the exit
status and the message; every job must end within 30 s (a hang is a failure).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

CASE, MPIEXEC, TWINSIM, SCENARIO, WORKDIR = sys.argv[1:6]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
SMALL = ["--set", "training.seq_len=32", "--set", "training.global_batch=4"]


def run(args, ranks=2, fault=None, deadline_s=30):
    """Runs twinsim under mpirun; returns (exit status, stdout + stderr)."""
    env = dict(ENV)
    for k in ("TWINSIM_FAULT_RANK", "TWINSIM_FAULT_STEP", "TWINSIM_FAULT_KIND"):
        env.pop(k, None)
    env.update(fault or {})
    cmd = [MPIEXEC, "-np", str(ranks), "--oversubscribe", TWINSIM, "run", SCENARIO, *SMALL, *args]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=deadline_s)
    except subprocess.TimeoutExpired as e:
        sys.exit(f"FAIL: no exit within {deadline_s} s (hang): {' '.join(cmd)}\n{e.stdout}\n{e.stderr}")
    output = p.stdout + p.stderr
    print(f"$ {' '.join(cmd)}  [{fault or ''}]\n  -> exit {p.returncode} after {time.monotonic() - start:.1f} s")
    return p.returncode, output


def expect(condition, what, output=""):
    if not condition:
        sys.exit(f"FAIL: {what}\n--- output ---\n{output}")


def expect_failure(status, output, pattern):
    expect(status != 0, "expected a non-zero exit status", output)
    expect(re.search(pattern, output), f"expected a message matching /{pattern}/", output)
    print(f"  ok: /{pattern}/")


def losses(out):
    with open(os.path.join(out, "measured.json")) as f:
        report = json.load(f)
    return report.get("first_step", 0), report["losses"]


def fresh(name):
    path = os.path.join(WORKDIR, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def rank_raises():
    status, out = run(["--steps", "3", "--out", fresh("raise")],
                      fault={"TWINSIM_FAULT_RANK": "1", "TWINSIM_FAULT_STEP": "1"})
    expect_failure(status, out, r"rank 1: injected fault at step 1")


def rank_dies():
    status, out = run(["--steps", "3", "--out", fresh("kill")],
                      fault={"TWINSIM_FAULT_RANK": "1", "TWINSIM_FAULT_STEP": "1", "TWINSIM_FAULT_KIND": "kill"})
    expect_failure(status, out, r"rank 1: injected fault: step 1")
    # mpirun's own report of the dead rank (Open MPI: "process rank 1 ... exited on signal 9")
    expect_failure(status, out, r"rank 1 .*signal 9")
    # and the surviving rank's, as mpirun ends it (exec/runtime/termination_notice.hpp)
    expect_failure(status, out, r"rank 0: ended by SIGTERM, most likely from mpirun because another rank of the job failed")


def plan_too_big():
    # tiny-gpt DP2 ZeRO 1: 3,356,160 params -> 4 B params + 4 B grads + 8 B / 2 Adam = 12 B each,
    # about 40 MB per rank; a 30 MB limit must be refused before the model is allocated
    status, out = run(["--steps", "1", "--memory-limit", "30000000", "--out", fresh("big")])
    expect_failure(status, out, r"rank [01]: plan does not fit: estimated training state 40\d{6} bytes per rank")
    expect("cannot allocate" not in out, "the refusal must come before any allocation", out)


def nan_loss():
    # a learning rate far too high drives the gradients, then the loss, to inf/nan: the run
    # stops before the update that would poison the weights, naming the step and the first
    # parameter whose gradient went bad (here, on this machine: step 2, embedding.word.weight,
    # while the loss is still a finite 8.8e8), or the loss
    status, out = run(["--steps", "8", "--lr", "1000", "--out", fresh("nan")])
    expect_failure(status, out, r"rank [01]: step \d+: (the gradient of [\w.]+ holds NaN or Inf while the loss is "
                                r"\S+|the loss is -?(nan|inf)); the run stops before the update")


def allocation_failure():
    # forced past the estimate, the tracked allocator runs out and names the category
    status, out = run(["--steps", "1", "--memory-limit", "1000000", "--force", "--out", fresh("oom")])
    expect_failure(status, out, r"rank [01]: cannot allocate \d+ bytes for (params|grads|optimizer)( tensor '[\w.]+')?: "
                                r"\d+ bytes already live, capacity 1000000 bytes")


def device_cuda():
    # refused, naming why, only where no GPU can be used (no device, or a build without
    # CUDA); with a GPU the run goes through and writes its report
    out = fresh("cuda")
    p = subprocess.run([TWINSIM, "run", SCENARIO, "--set", "plan.dp=1", "--device", "cuda", "--out", out], env=ENV,
                       capture_output=True, text=True, timeout=120)
    if p.returncode == 0:
        expect(os.path.exists(os.path.join(out, "measured.json")), "cuda run wrote no measured.json",
               p.stdout + p.stderr)
        return
    expect_failure(p.returncode, p.stdout + p.stderr, r"--device cuda: .*(no GPU|GPU is listed)")


def reference_losses(name, steps):
    """The losses of an uninterrupted run of `steps` steps."""
    ref = fresh(name)
    status, out = run(["--steps", str(steps), "--out", ref])
    expect(status == 0, "reference run failed", out)
    return losses(ref)[1]


def expect_resume_matches(ckpt, name, steps, first_expected, ref_losses):
    """Resumes from `ckpt`: it must start at `first_expected` and go on bit-identically."""
    resumed = fresh(name)
    status, out = run(["--steps", str(steps), "--checkpoint-dir", ckpt, "--resume", "--out", resumed])
    expect(status == 0, "resume failed", out)
    first, tail = losses(resumed)
    expect(first == first_expected and tail == ref_losses[first_expected:],
           f"resumed at {first} with {tail}, expected {first_expected} with {ref_losses[first_expected:]}")
    print(f"  ok: steps {first}-{steps - 1} after resume {tail} == uninterrupted (bitwise)")


def checkpoint_resume():
    ref_losses = reference_losses("ref", 5)
    # checkpoints every step; rank 1 is killed while writing the one after step 2 (3 steps
    # done), after its temporary file and before the rename
    ckpt = fresh("ckpt")
    status, out = run(["--steps", "5", "--checkpoint-dir", ckpt, "--out", fresh("killed")],
                      fault={"TWINSIM_FAULT_RANK": "1", "TWINSIM_FAULT_STEP": "2", "TWINSIM_FAULT_KIND": "checkpoint"})
    expect_failure(status, out, r"rank 1: injected fault: while writing checkpoint .*rank-1\.safetensors\.tmp\.")
    with open(os.path.join(ckpt, "latest")) as f:
        expect(f.read().strip() == "2", "latest must still name the checkpoint after 2 steps")
    # resume: the previous checkpoint loads and the run continues bit-identically
    expect_resume_matches(ckpt, "resumed", 5, 2, ref_losses)
    # corrupt one data byte of rank 0's newest checkpoint: detected by the checksum, refused
    with open(os.path.join(ckpt, "latest")) as f:
        step = f.read().strip()
    victim = os.path.join(ckpt, f"step-{step}", "rank-0.safetensors")
    with open(victim, "r+b") as f:
        f.seek(-5, os.SEEK_END)
        b = f.read(1)
        f.seek(-5, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x40]))
    status, out = run(["--steps", "6", "--checkpoint-dir", ckpt, "--resume", "--out", fresh("corrupt")])
    expect_failure(status, out, r"rank 0: checkpoint '.*rank-0\.safetensors'.*checksum")
    # a damaged `latest` ("4garbage") is refused, not read as step 4
    with open(os.path.join(ckpt, "latest"), "w") as f:
        f.write(step + "garbage")
    status, out = run(["--steps", "6", "--checkpoint-dir", ckpt, "--resume", "--out", fresh("latest")])
    expect_failure(status, out, r"latest holds '\d+garbage', not a step number")


def rank_stalls():
    # rank 1 stops itself (SIGSTOP) at the start of step 2: rank 0 waits in the step's first
    # collective until its watchdog (3 s here) ends the job, naming itself, the step and the
    # op; mpirun ends the stopped rank. The job must end within the timeout + 10 s.
    ref_losses = reference_losses("stall_ref", 4)
    ckpt = fresh("stall_ckpt")
    start = time.monotonic()
    status, out = run(["--steps", "4", "--checkpoint-dir", ckpt, "--watchdog-timeout", "3", "--out", fresh("stalled")],
                      fault={"TWINSIM_FAULT_RANK": "1", "TWINSIM_FAULT_STEP": "2", "TWINSIM_FAULT_KIND": "stop"},
                      deadline_s=3 + 10 + 5)  # + 5 s for mpirun's start on a busy 2-core machine
    expect_failure(status, out, r"rank 0: no progress for 3 s in step 2 \(last op begun: [\w.]+\): another rank is dead "
                                r"or stalled")
    print(f"  ok: the stalled job ended after {time.monotonic() - start:.1f} s")
    # the checkpoint after 2 steps is whole: the resumed run continues bit-identically
    expect_resume_matches(ckpt, "stall_resumed", 4, 2, ref_losses)


def determinism():
    a, b = fresh("det_a"), fresh("det_b")
    for out in (a, b):
        status, text = run(["--steps", "3", "--out", out])
        expect(status == 0, "run failed", text)
    la, lb = losses(a)[1], losses(b)[1]
    expect(la == lb, f"losses differ between identical runs: {la} vs {lb}")
    print(f"  ok: identical losses {la}")


os.makedirs(WORKDIR, exist_ok=True)
globals()[CASE]()
print("PASS")
