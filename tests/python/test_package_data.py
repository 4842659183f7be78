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
