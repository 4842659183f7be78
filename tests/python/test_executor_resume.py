"""The executor as a trainer: a run on a user's token file, stopped and resumed from its
kept checkpoints, gives the same losses as the uninterrupted run (mpirun, 2 ranks, DP)."""
import json
import struct
import subprocess

import pytest


def _run(root, twinsim_exe, mpirun, tmp_path, out, *extra):
    start, env = mpirun
    cmd = [*start, "-np", "2", str(twinsim_exe), "run",
           str(root / "scenarios" / "exec" / "tiny-gpt-dp2.yaml"),
           "--set", f"training.data.path={tmp_path / 'tokens.bin'}", "--out", str(tmp_path / out), *extra]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((tmp_path / out / "measured.json").read_text())


def test_resumed_run_on_a_token_file_equals_the_uninterrupted_one(root, twinsim_exe, mpirun, tmp_path):
    # a uint16 token file (nanoGPT's .bin) below tiny-gpt's vocabulary of 512
    ids = [(i * 7919 + (i // 13) * 104729) % 512 for i in range(20000)]
    (tmp_path / "tokens.bin").write_bytes(b"".join(struct.pack("<H", i) for i in ids))
    whole = _run(root, twinsim_exe, mpirun, tmp_path, "whole", "--steps", "4")
    ckpt = str(tmp_path / "ckpt")
    first = _run(root, twinsim_exe, mpirun, tmp_path, "first", "--steps", "2", "--checkpoint-dir", ckpt, "--keep", "2",
                 "--save-initial")
    kept = sorted(p.name for p in (tmp_path / "ckpt").iterdir() if p.name.startswith("step-"))
    assert kept == ["step-0", "step-1", "step-2"]  # the newest 2, and the initial weights
    rest = _run(root, twinsim_exe, mpirun, tmp_path, "rest", "--steps", "4", "--checkpoint-dir", ckpt, "--keep", "2", "--resume")
    assert first["losses"] + rest["losses"] == whole["losses"]  # bit for bit, in double
    # resuming a run that already holds its steps is refused, not reported as zeros
    with pytest.raises(subprocess.CalledProcessError) as refused:
        _run(root, twinsim_exe, mpirun, tmp_path, "again", "--steps", "4", "--checkpoint-dir", ckpt, "--keep", "2", "--resume")
    assert b"--steps=4 is not past the checkpoint resumed, which holds 4 steps" in refused.value.stderr
    assert len(set(whole["losses"])) == 4  # it trains: the losses move
