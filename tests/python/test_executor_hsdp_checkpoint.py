"""Checkpoints of a hybrid-sharded run (plan.dp_replicate 2 on dp 4, ZeRO-3: two replicas of a
shard group of 2): `twinsim checkpoint merge` joins replica 0's shard group into the whole
model, which must be the single-rank run's model (the same initial weights bit for bit, the
update of 2 Adam steps to float32 summation order), and a run stopped and resumed from
its own checkpoints must give the uninterrupted run's losses bit for bit (mpirun, 4 ranks)."""
import json
import subprocess

import numpy as np
import pytest

safetensors_numpy = pytest.importorskip("safetensors.numpy")

HSDP = ["--set", "plan.dp=4", "--set", "plan.zero=3", "--set", "plan.dp_replicate=2"]
SINGLE = ["--set", "plan.dp=1", "--set", "plan.zero=0"]


def _run(tools, tmp_path, ranks, plan, out, *extra):
    (start, env), exe, scenario = tools
    cmd = [*start, "-np", str(ranks), str(exe), "run", str(scenario), *plan, "--out", str(tmp_path / out), *extra]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((tmp_path / out / "measured.json").read_text())


def _merge(tools, tmp_path, plan, ckpt, step):
    _, exe, scenario = tools
    out = tmp_path / f"{ckpt}-step{step}.safetensors"
    cmd = [str(exe), "checkpoint", "merge", str(scenario), *plan, "--checkpoint-dir", str(tmp_path / ckpt),
           "--out", str(out), "--step", str(step)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return r, out


@pytest.fixture
def tools(twinsim_exe, mpirun, tmp_path):
    # a uint16 token file below tiny-gpt's vocabulary of 512 (as test_executor_resume.py)
    ids = np.array([(i * 7919 + (i // 13) * 104729) % 512 for i in range(20000)], dtype="<u2")
    ids.tofile(tmp_path / "tokens.bin")
    # Adam's eps 1e-5, not 1e-8: its first update is g / (|g| + eps), a sign where |g| >> eps,
    # so a gradient zero in exact arithmetic (GPT-2's key bias), rounded differently in another
    # summation order, would flip it (test_numpy_reference.py's reason)
    scenario = tmp_path / "tiny-gpt.yaml"
    scenario.write_text(f"""name: tiny-gpt-hsdp-checkpoint
model: tiny-gpt
cluster: host
training:
  seq_len: 64
  global_batch: 8
  micro_batch: 2
  precision: fp32
  optimizer: {{name: adam, lr: 1e-3, eps: 1e-5}}
  data: {{path: {tmp_path / 'tokens.bin'}, dtype: uint16}}
plan: {{tp: 1, pp: 1, dp: 1, zero: 0, recompute: none}}
""")
    return mpirun, twinsim_exe, scenario


def _relative(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64)))


def test_hsdp_checkpoint_merges_to_the_single_rank_model_and_resumes(tools, tmp_path):
    keep = ["--keep", "3", "--save-initial"]
    single = _run(tools, tmp_path, 1, SINGLE, "single", "--steps", "2", "--checkpoint-dir", str(tmp_path / "c1"), *keep)
    hsdp = _run(tools, tmp_path, 4, HSDP, "hsdp", "--steps", "2", "--checkpoint-dir", str(tmp_path / "c4"), *keep)
    # the same batches, summed in another order: the losses agree to float32 rounding
    assert np.allclose(hsdp["losses"], single["losses"], rtol=1e-6, atol=0)

    merged = {}
    for step in (0, 2):
        for name, plan in (("c1", SINGLE), ("c4", HSDP)):
            r, out = _merge(tools, tmp_path, plan, name, step)
            assert r.returncode == 0, r.stderr
            merged[name, step] = safetensors_numpy.load_file(out)
    assert merged["c1", 0].keys() == merged["c4", 0].keys()
    for k, w in merged["c1", 0].items():  # initial weights: padding and ZeRO shares undone, bit for bit
        assert np.array_equal(w, merged["c4", 0][k]), k
    # the two steps' update, over the whole model: float32 summation order alone leaves the
    # runs' updates within 1e-4 of each other, half the batch's gradient (a replica's sum
    # missing) would not. Over the model, not per tensor: GPT-2's key bias has a gradient zero
    # in exact arithmetic, so its ~1e-9 update is rounding noise in both runs
    sq_diff = sq_norm = 0.0
    for k, w in merged["c1", 2].items():
        moved = w.astype(np.float64) - merged["c1", 0][k]
        sq_diff += float(np.sum((merged["c4", 2][k] - merged["c4", 0][k] - moved) ** 2))
        sq_norm += float(np.sum(moved ** 2))
    print(f"HSDP update vs single rank's: {np.sqrt(sq_diff / sq_norm):.2e} relative over the model")
    assert sq_norm > 0 and np.sqrt(sq_diff / sq_norm) < 1e-4

    # the checkpoint names its plan: merged as a run without replicas it is refused
    r, _ = _merge(tools, tmp_path, HSDP[:4] + ["--set", "plan.dp_replicate=1"], "c4", 2)
    assert r.returncode != 0 and "dp_replicate" in r.stderr, r.stderr

    # stopped after 2 steps and resumed from the HSDP checkpoint: the uninterrupted run's losses
    whole = _run(tools, tmp_path, 4, HSDP, "whole", "--steps", "4")
    rest = _run(tools, tmp_path, 4, HSDP, "rest", "--steps", "4", "--checkpoint-dir", str(tmp_path / "c4"), "--keep", "3",
                "--resume")
    assert hsdp["losses"] + rest["losses"] == whole["losses"]  # bit for bit, in double
    assert len(set(whole["losses"])) == 4  # it trains: the losses move
