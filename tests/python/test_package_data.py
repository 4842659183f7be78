"""The package outside the repository (issue 57): its scenarios and catalogs as package data,
``serve()``'s frame, and "did you mean" by catalog family."""
import pytest

import twinsim


def test_scenario_paths_work_from_another_directory(tmp_path, monkeypatch, root):
    monkeypatch.chdir(tmp_path)  # no scenarios/ here
    s = twinsim.load_scenario("scenarios/default.yaml")
    assert s.get("model") == twinsim.load_scenario(root / "scenarios" / "default.yaml").get("model")
    assert twinsim.simulate(twinsim.load_scenario("scenarios/training/llama3-70b-h100.yaml")).step_s > 0
    # the package's copy is the repository's file, byte for byte
    packaged = twinsim.data_path("scenarios/exec/tiny-gpt-single.yaml")
    assert packaged.read_bytes() == (root / "scenarios" / "exec" / "tiny-gpt-single.yaml").read_bytes()
    assert twinsim.data_path("hardware/catalog/gpus/h100-sxm.yaml").is_file()
    assert twinsim.data_path("models/catalog/llama3-70b.yaml").is_file()
    with pytest.raises(FileNotFoundError, match="not among the package's files"):
        twinsim.data_path("scenarios/validation/host/gpt-dp2-zero1.yaml")  # suites stay in the repository
    with pytest.raises(twinsim.ScenarioError, match="cannot be opened"):
        twinsim.load_scenario("scenarios/no-such.yaml")


def test_serve_returns_the_dict_with_a_frame(root):
    r = twinsim.serve(root / "scenarios" / "inference" / "llama2-7b-a100.yaml", requests=40, rate=4, seed=1)
    assert isinstance(r, dict) and r["ttft"]["p99_s"] > 0
    frame = r.to_frame()
    assert {"ttft", "tpot"} <= set(frame.index)
    assert frame.loc["ttft", "p99_s"] == r["ttft"]["p99_s"]
    assert (frame["p99_s"] >= frame["p50_s"]).all()


def test_a_family_name_suggests_its_members():
    with pytest.raises(twinsim.ScenarioError, match="did you mean 'h100-[^']*'.*'h100-sxm'|did you mean 'h100-sxm'"):
        twinsim.capacity("llama3-8b", tokens=1e9, days=1, gpu="h100")


def test_cluster_host_is_the_calibrated_file_as_on_the_command_line(tmp_path, monkeypatch, root, twinsim_exe):
    import json
    import os
    import subprocess

    scenario = root / "scenarios" / "exec" / "tiny-gpt-single.yaml"
    # a host file whose kernel launch is 10 us longer than the committed calibration's, so it shows in the step
    text = (root / "hardware" / "calibrated" / "host.yaml").read_text()
    other = tmp_path / "other-host.yaml"
    other.write_text(text.replace("kernel_launch_us: ", "kernel_launch_us: 1"))

    def cli_step(host_file):
        r = subprocess.run([str(twinsim_exe), "simulate", str(scenario), "--json"], capture_output=True, text=True,
                           env=dict(os.environ, TWINSIM_HOST_FILE=host_file), timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["time"]["step_s"]

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TWINSIM_HOST_FILE", str(other))
    assert twinsim.host_calibration_file() == other
    calibrated = twinsim.simulate(scenario).step_s
    monkeypatch.setenv("TWINSIM_HOST_FILE", "")  # none: the catalog's placeholder
    assert twinsim.host_calibration_file() is None
    placeholder = twinsim.simulate(scenario).step_s
    assert calibrated == cli_step(str(other)) and placeholder == cli_step("")
    assert calibrated != placeholder
    # named nowhere: hardware/calibrated/host.yaml from the working directory comes first
    monkeypatch.delenv("TWINSIM_HOST_FILE")
    (tmp_path / "hardware" / "calibrated").mkdir(parents=True)
    (tmp_path / "hardware" / "calibrated" / "host.yaml").write_text(other.read_text())
    assert twinsim.host_calibration_file() == (tmp_path / "hardware" / "calibrated" / "host.yaml").resolve()
    assert twinsim.simulate(scenario).step_s == calibrated
