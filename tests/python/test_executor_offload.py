"""The executor's ZeRO-Offload (plan.offload_optimizer, exec/train/zero.cpp): each rank's
optimizer shard (fp32 weights and Adam moments) lives in host memory and is updated there,
its gradients copied to the host and its weights back every step. Against the run without
offload (mpirun, 2 ranks, tiny-gpt): the same losses bit for bit (the same arithmetic on the
same values), the optimizer state moved from the GPU's accounting to the host's, exactly as
the simulator predicts, and the copies timed inside optimizer.step."""
import json
import subprocess

import pytest

TINY_GPT_PARAMS = 3_356_160  # models/catalog/tiny-gpt.yaml (param_count_test); flat blocks split evenly over 2


def _settings(precision, zero, offload):
    return ["--set", f"training.precision={precision}", "--set", f"plan.zero={zero}",
            "--set", f"plan.offload_optimizer={'true' if offload else 'false'}"]


def _run(root, twinsim_exe, mpirun, tmp_path, precision, zero, offload):
    start, env = mpirun
    out = tmp_path / f"{precision}-{zero}-{offload}"
    cmd = [*start, "-np", "2", str(twinsim_exe), "run", str(root / "scenarios" / "exec" / "tiny-gpt-dp2.yaml"),
           "--steps", "3", "--out", str(out), *_settings(precision, zero, offload)]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((out / "measured.json").read_text())


def _simulated_memory(root, twinsim_exe, precision, zero):
    cmd = [str(twinsim_exe), "simulate", str(root / "scenarios" / "exec" / "tiny-gpt-dp2.yaml"), "--json",
           *_settings(precision, zero, True)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory"]


@pytest.mark.parametrize("precision,zero", [("fp32", 1), ("bf16", 3)])
def test_offloaded_optimizer_trains_alike_with_its_state_on_the_host(root, twinsim_exe, mpirun, tmp_path,
                                                                      precision, zero):
    plain = _run(root, twinsim_exe, mpirun, tmp_path, precision, zero, False)
    offloaded = _run(root, twinsim_exe, mpirun, tmp_path, precision, zero, True)
    assert offloaded["losses"] == plain["losses"]
    gpu, host = offloaded["memory"]["breakdown"], offloaded["memory"]["host_breakdown"]
    assert gpu["optimizer"] == 0 < plain["memory"]["breakdown"]["optimizer"]
    assert plain["memory"]["host_bytes"] == 0
    # fp32 master weights + two Adam moments, 12 B per value of the rank's half (ZeRO 1 and 3)
    assert host["optimizer"] == 12 * TINY_GPT_PARAMS // 2
    simulated = _simulated_memory(root, twinsim_exe, precision, zero)
    assert host["optimizer"] == simulated["host_bytes"]
    assert gpu["optimizer"] == simulated["breakdown"]["optimizer"]
    # the other categories on the GPU are untouched
    for category in ("params", "grads"):
        assert gpu[category] == plain["memory"]["breakdown"][category]
    ops = offloaded["ops"]
    for copy in ("offload.grads_d2h", "offload.params_h2d"):
        assert ops[copy]["count_per_step"] > 0 and ops[copy]["mean_s_per_step"] > 0
    assert ops["optimizer.step"]["mean_s_per_step"] > (ops["offload.grads_d2h"]["mean_s_per_step"]
                                                       + ops["offload.params_h2d"]["mean_s_per_step"])
    assert "offload.grads_d2h" not in plain["ops"]


# plan.offload_device: nvme (ZeRO-Infinity's NVMe tier; DeepSpeed allows it with ZeRO-3 only):
# the host node describes no drives, so the run names their read rate (it prices nothing the
# executor measures). The rank keeps its states in a swap file between steps.
NVME = ["--set", "plan.offload_device=nvme", "--set", "cluster.host.nvme_read_GBps=2"]


def _run_nvme(root, twinsim_exe, mpirun, out, *extra):
    start, env = mpirun
    cmd = [*start, "-np", "2", str(twinsim_exe), "run", str(root / "scenarios" / "exec" / "tiny-gpt-dp2.yaml"),
           "--out", str(out), *_settings("bf16", 3, True), *NVME, *extra]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((out / "measured.json").read_text())


def test_optimizer_states_swap_through_a_file_between_steps(root, twinsim_exe, mpirun, tmp_path):
    on_host = _run(root, twinsim_exe, mpirun, tmp_path, "bf16", 3, True)
    swapped = _run_nvme(root, twinsim_exe, mpirun, tmp_path / "nvme", "--steps", "3")
    assert swapped["losses"] == on_host["losses"]  # the same update, read back bit for bit
    shard_states = 12 * TINY_GPT_PARAMS // 2  # fp32 master and two Adam moments of the rank's half
    mem = swapped["memory"]
    assert mem["nvme_bytes"] == mem["nvme_breakdown"]["optimizer"] == shard_states
    assert "nvme_bytes" not in on_host["memory"]
    cmd = [str(twinsim_exe), "simulate", str(root / "scenarios" / "exec" / "tiny-gpt-dp2.yaml"), "--json",
           *_settings("bf16", 3, True), *NVME]
    simulated = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["memory"]
    assert simulated["nvme_bytes"] == shard_states  # predicted to the byte
    # CPU memory: the executor reads the whole shard for its update (one sub-group), as the
    # CPU tier keeps it; the simulator prices DeepSpeed's pool, a fourth fp32 buffer for the
    # gradients: 16 B a value against the 12 measured
    assert mem["host_breakdown"]["optimizer"] == on_host["memory"]["host_breakdown"]["optimizer"] == shard_states
    assert simulated["host_breakdown"]["optimizer"] == 16 * TINY_GPT_PARAMS // 2
    ops = swapped["ops"]
    for swap in ("offload.nvme_read", "offload.nvme_write"):
        assert ops[swap]["count_per_step"] == 1 and ops[swap]["mean_s_per_step"] > 0
    assert ops["optimizer.step"]["mean_s_per_step"] > ops["offload.nvme_read"]["mean_s_per_step"] + \
        ops["offload.nvme_write"]["mean_s_per_step"]


def test_swapped_states_checkpoint_and_resume_bit_for_bit(root, twinsim_exe, mpirun, tmp_path):
    start, env = mpirun
    mpirun = (start, {**env, "TWINSIM_SWAP_DIR": str(tmp_path)})  # where the ranks' swap files go
    whole = _run_nvme(root, twinsim_exe, mpirun, tmp_path / "whole", "--steps", "4")
    ckpt = str(tmp_path / "ckpt")
    first = _run_nvme(root, twinsim_exe, mpirun, tmp_path / "first", "--steps", "2", "--checkpoint-dir", ckpt)
    rest = _run_nvme(root, twinsim_exe, mpirun, tmp_path / "rest", "--steps", "4", "--checkpoint-dir", ckpt, "--resume")
    assert first["losses"] + rest["losses"] == whole["losses"]
    assert not list(tmp_path.glob("twinsim-swap-*"))  # each rank removed its swap file
