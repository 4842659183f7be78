"""Expert-parallel serving in the executor, through the user's path: `mpirun -np 2 twinsim run`
on scenarios/exec/tiny-moe-infer-dp2-ep2.yaml (two replicas, each holding half of every MoE
layer's experts, its rows crossing to the experts' replica at every pass) must generate
replica 0's tokens exactly as one rank holding every expert does for the same prompts, and
cache the same KV bytes per token; and a ZeRO-1/3 training run under EP (DP 4 x EP 2) stopped
and resumed from its checkpoint must give the uninterrupted run's losses bit for bit. Training
numerics under EP are checked by tests/exec_mpi (parity) and test_numpy_reference.py; each
replica's cached logits by tests/exec_mpi/decoder_mpi.cpp."""
import json
import subprocess

import pytest

SCENARIO = "scenarios/exec/tiny-moe-infer-dp2-ep2.yaml"


def _serve(twinsim_exe, root, out, argv_start=None, env=None, ranks=1, extra=()):
    cmd = [*(argv_start or []), *(["-np", str(ranks)] if argv_start else []), str(twinsim_exe), "run",
           str(root / SCENARIO), "--out", str(out), *extra]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((out / "measured.json").read_text())


def test_expert_parallel_serving_generates_the_one_rank_tokens(twinsim_exe, mpirun, root, tmp_path):
    start, env = mpirun
    split = _serve(twinsim_exe, root, tmp_path / "ep2", start, env, ranks=2)
    whole = _serve(twinsim_exe, root, tmp_path / "ep1", extra=["--set", "plan.dp=1", "--set", "plan.ep=1"])
    assert len(split["generated_tokens"]) == 32
    assert split["generated_tokens"] == whole["generated_tokens"]
    assert split["inference"]["kv_cache_bytes_per_token"] == whole["inference"]["kv_cache_bytes_per_token"]
    # each replica holds half the routed experts: fewer parameters on the GPU than the whole model
    assert split["memory"]["breakdown"]["params"] < whole["memory"]["breakdown"]["params"]


def _train(twinsim_exe, root, out, start, env, *extra):
    cmd = [*start, "-np", "4", str(twinsim_exe), "run", str(root / "scenarios/validation/host/moe-dp4-ep2-zero3.yaml"),
           "--out", str(out), *extra]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((out / "measured.json").read_text())


@pytest.mark.parametrize("zero", [1, 3])
def test_expert_parallel_zero_run_resumes_bit_for_bit(twinsim_exe, mpirun, root, tmp_path, zero):
    # ZeRO under EP keeps each layer's expert shards apart (layerN.experts.*, sharded over the
    # expert-data-parallel pair): a run stopped after 2 steps and resumed from its checkpoint
    # gives the uninterrupted run's losses exactly
    start, env = mpirun
    plan = ["--set", f"plan.zero={zero}"]
    whole = _train(twinsim_exe, root, tmp_path / "whole", start, env, "--steps", "4", *plan)
    ckpt = str(tmp_path / "ckpt")
    first = _train(twinsim_exe, root, tmp_path / "first", start, env, "--steps", "2", "--checkpoint-dir", ckpt, *plan)
    rest = _train(twinsim_exe, root, tmp_path / "rest", start, env, "--steps", "4", "--checkpoint-dir", ckpt,
                  "--resume", *plan)
    assert first["losses"] + rest["losses"] == whole["losses"]
    assert len(set(whole["losses"])) == 4
