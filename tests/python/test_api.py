"""The Python API against the command line's own answers and published figures."""
import json
import os
import pathlib
import subprocess

import pytest

import twinsim


def test_default_scenario_matches_the_cli_report(root, twinsim_exe):
    # the CLI and the module run the same simulator: their JSON reports are equal
    py = twinsim.simulate(twinsim.default_scenario()).to_dict()
    out = subprocess.run([str(twinsim_exe), "simulate", "--json"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["time"]["step_s"] == pytest.approx(py["time"]["step_s"], rel=1e-12)


def test_gpt3_parameter_count():
    # Brown et al. 2020, Table 2.1: GPT-3 175B (174.6B counted from the architecture)
    r = twinsim.memory(twinsim.default_scenario())
    assert r.to_dict()["params"]["total"] == pytest.approx(175e9, rel=0.01)


def test_set_follows_the_command_lines_rules(root, twinsim_exe):
    # Scenario.set runs --set's own code: a catalog name becomes a preset to edit in place,
    # a key under any other single value is refused (it used to be silently replaced)
    s = twinsim.load_scenario(root / "scenarios" / "default.yaml")
    assert s.set("model.layers", 2).to_dict()["model"] == {"preset": "gpt3-175b", "layers": 2}
    with pytest.raises(twinsim.ScenarioError, match="plan.tp=8 is a single value, so it has no keys to set"):
        s.set("plan.tp.x", 1)
    edited = s.set("plan.pp", 8).set("plan.dp", 24).set("model.layers", 48)
    cli = subprocess.run([str(twinsim_exe), "simulate", str(root / "scenarios" / "default.yaml"), "--json", "--set", "plan.pp=8",
                          "--set", "plan.dp=24", "--set", "model.layers=48"], capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout)["time"]["step_s"] == pytest.approx(twinsim.simulate(edited).to_dict()["time"]["step_s"],
                                                                     rel=1e-12)


def test_scenario_dict_roundtrip_and_set(root):
    s = twinsim.load_scenario(root / "scenarios" / "default.yaml")
    d = s.to_dict()
    assert d["model"] == "gpt3-175b" and d["plan"]["tp"] == 8
    s2 = s.set("plan.pp", 8).set("plan.dp", 24)
    assert s.get("plan.pp") == 16 and s2.get("plan.pp") == 8  # set returns a copy
    assert s2.resolved()["gpus"] == 8 * 8 * 24
    # the resolved plan lists every knob, defaults filled in, stage_layers resolved
    plan = s2.set("plan.gradient_compression", "int8").resolved()["plan"]
    assert plan["pp"] == 8 and plan["stage_layers"] == [12] * 8
    assert plan["gradient_compression"] == "int8" and plan["flash_attention"] is True
    assert plan["zero_hpz_partition_size"] == 1 and plan["gradient_topk_ratio"] == pytest.approx(0.01)


def test_set_edits_a_named_stack_as_the_cli_does(root, small_scenario, twinsim_exe):
    # `--set stack.host_op_us=...` on `stack: megatron-eager` keeps the preset's other keys
    eager = small_scenario.set("stack", "megatron-eager")
    edited = eager.set("stack.host_op_us", 1000)
    assert edited.get("stack") == {"preset": "megatron-eager", "host_op_us": 1000}
    path = root / "scenarios" / "default.yaml"
    cli = subprocess.run([str(twinsim_exe), "simulate", str(path), "--json", "--set", "stack=megatron-eager",
                          "--set", "stack.host_op_us=1000"], capture_output=True, text=True, check=True).stdout
    py = twinsim.simulate(twinsim.load_scenario(path).set("stack", "megatron-eager").set("stack.host_op_us", 1000))
    assert json.loads(cli)["time"]["step_s"] == pytest.approx(py.step_s, rel=1e-12)
    assert py.step_s > twinsim.simulate(twinsim.load_scenario(path)).step_s


def test_scenario_error_has_the_cli_message(small_scenario):
    with pytest.raises(twinsim.ScenarioError) as e:
        twinsim.simulate(small_scenario.set("plan.tp", 3))
    assert str(e.value) == "plan.tp=3 does not divide model.heads=32"
    assert e.value.key == "plan.tp" and e.value.value == "3"
    assert isinstance(e.value, ValueError)


def test_memory_frame_has_one_row_per_stage(small_scenario):
    r = twinsim.memory(small_scenario.set("plan.pp", 4))
    df = r.to_frame()
    assert list(df["stage"]) == [0, 1, 2, 3]
    cats = ["params", "grads", "optimizer", "activations", "kv_cache", "buffers"]
    assert (df[cats].sum(axis=1) == df["peak_bytes"]).all()
    assert df["peak_bytes"].max() == r.peak_bytes


def test_simulate_frame_breakdown_sums_to_step(small_scenario):
    rep = twinsim.simulate(small_scenario)
    df = rep.to_frame()
    parts = df[(df.section == "time") & df.name.str.startswith("breakdown.")]["value"].sum()
    assert parts == pytest.approx(rep.step_s, rel=1e-9)
    assert 0 < rep.mfu < 1


def test_full_fidelity_is_the_cli_s(root, twinsim_exe):
    # `fidelity` is the CLI's --fidelity: Llama 3 70B on 256 H100s behind a 4:1 spine
    # (single-plane leaves of 2 nodes), the same full-mode step, folded to 64 GPUs
    path = root / "scenarios" / "training" / "llama3-70b-h100.yaml"
    fabric = {"nodes_per_leaf": 2, "oversubscription": 4, "rail_optimized": False}
    sets = ["plan.dp=8"] + [f"cluster.fabric.{k}={str(v).lower()}" for k, v in fabric.items()]
    cli = subprocess.run([str(twinsim_exe), "simulate", str(path), "--json", "--fidelity", "full",
                          *sum([["--set", s] for s in sets], [])], capture_output=True, text=True, check=True).stdout
    s = twinsim.load_scenario(path).set("plan.dp", 8).set("cluster.fabric", fabric)
    full = twinsim.simulate(s, fidelity="full")
    assert full.to_dict() == json.loads(cli)
    per_rank = twinsim.simulate(s, fidelity="full-per-rank")
    assert per_rank.step_s == full.step_s
    assert (full.to_dict()["time"]["simulated_gpus"], per_rank.to_dict()["time"]["simulated_gpus"]) == (64, 256)
    with pytest.raises(twinsim.ScenarioError) as e:
        twinsim.simulate(s, fidelity="exact")
    assert e.value.key == "fidelity"


def test_search_top_plans_fit_and_are_sorted(small_scenario):
    res = twinsim.search(small_scenario, gpus=8, top=5, max_micro_batch=2)
    df = res.to_frame()
    assert len(df) == 5
    assert (df["gpus"] == 8).all()
    assert (df["peak_bytes"] <= 80 * 1024**3).all()  # H100 SXM: 80 GB HBM3
    assert list(df["simulated_step_s"]) == sorted(df["simulated_step_s"])
    # the best plan, simulated on its own, gives the same step time
    best = twinsim.simulate(small_scenario, overrides=res.best_overrides())
    assert best.step_s == pytest.approx(df["simulated_step_s"][0], rel=1e-12)
    assert len(res.pareto_frame()) >= 1


def test_capacity_uses_6nt():
    # GPT-3 175B on 300B tokens: 3.14e23 FLOPs (Brown et al. 2020, Table D.1)
    plan = twinsim.capacity("gpt3-175b", tokens=300e9, days=60, gpu="a100-sxm-80gb", seq_len=2048,
                            global_batch=1536, max_gpus=4096, price_per_gpu_hour=2.0)
    assert plan.flops_6nt == pytest.approx(3.14e23, rel=0.01)
    assert plan.feasible and plan.days <= 60
    assert plan.cost == pytest.approx(plan.gpu_hours * 2.0)
    assert len(plan.to_frame()) == 1


def test_capacity_includes_failures_and_says_what_they_cost():
    # Llama-3-8B on 1e11 tokens: failures (default: Llama 3's rates) stretch the failure-free
    # time by 1 / ETTR, and the GPU-hours beyond the failure-free run are what they cost
    kw = dict(tokens=1e11, days=3, gpu="h100-sxm", max_gpus=256, price_per_gpu_hour=2.0)
    with_failures = twinsim.capacity("llama3-8b", **kw)
    g = with_failures.goodput
    assert g["failure_rates"] == "llama3-h100"
    assert 0 < g["ettr"] < 1
    assert with_failures.days == pytest.approx(with_failures.failure_free_days / g["ettr"], rel=1e-9)
    t = g["time_to_train"]
    extra_hours = (with_failures.days - with_failures.failure_free_days) * 24 * with_failures.gpus
    assert t["failure_gpu_hours"] == pytest.approx(extra_hours, rel=1e-6)
    assert t["failure_cost"] == pytest.approx(2.0 * t["failure_gpu_hours"], rel=1e-9)
    # a slower restart costs more; no failures: no goodput object, the failure-free time
    slow = twinsim.capacity("llama3-8b", restart_minutes=60, **kw)
    assert slow.goodput["time_to_train"]["failure_gpu_hours"] > t["failure_gpu_hours"]
    none = twinsim.capacity("llama3-8b", failures="none", **kw)
    assert "goodput" not in none.to_dict() and "failure_free_days" not in none.to_dict()
    assert none.gpus <= with_failures.gpus  # failures never make the answer smaller
    if none.gpus == with_failures.gpus:
        assert none.days == pytest.approx(with_failures.failure_free_days, rel=1e-9)
    with pytest.raises(twinsim.ScenarioError, match="rsc1-a100"):
        twinsim.capacity("llama3-8b", failures="llama3-h10", **kw)


def _cli_json(exe, *args):
    import json
    import subprocess

    r = subprocess.run([str(exe), *args, "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_capacity_answers_as_the_command(twinsim_exe):
    # the same request gives the command's answer, failures (llama3-h100 by default) included
    plan = twinsim.capacity("llama3-8b", tokens=2e10, days=7, gpu="h100-sxm", max_gpus=32)
    cli = _cli_json(twinsim_exe, "capacity", "--model", "llama3-8b", "--gpu", "h100-sxm", "--tokens", "2e10",
                    "--days", "7", "--max-gpus", "32")
    assert plan.to_dict() == cli
    assert plan.goodput["failure_rates"] == "llama3-h100" and plan.days > plan.failure_free_days
    # without failures the days are the steps at the simulated step time
    ideal = twinsim.capacity("llama3-8b", tokens=2e10, days=7, gpu="h100-sxm", max_gpus=32, failures="none")
    assert "goodput" not in ideal.to_dict()
    assert ideal.days == pytest.approx(ideal.steps * ideal.step_s / 86400, rel=1e-9)
    with pytest.raises(twinsim.ScenarioError, match="failures=llama3-a100"):
        twinsim.capacity("llama3-8b", tokens=1e11, days=7, gpu="h100-sxm", failures="llama3-a100")


def test_serving_capacity(twinsim_exe):
    cap = twinsim.capacity("llama3-8b", gpu="h100-sxm", serve=True, rate=2, ttft_p99=1, output_len=128)
    cli = _cli_json(twinsim_exe, "capacity", "--serve", "--model", "llama3-8b", "--gpu", "h100-sxm", "--rate", "2",
                    "--ttft-p99", "1", "--output-len", "128")
    assert cap.to_dict() == cli
    assert cap.feasible and cap.deployment["ttft_p99_s"] <= 1
    assert cap.gpus == cap.deployment["tp"] * cap.deployment["replicas"]
    frame = cap.to_frame()
    assert list(frame["gpus"]) == sorted(frame["gpus"]) and frame["gpus"].iloc[-1] == cap.gpus
    with pytest.raises(twinsim.ScenarioError, match="rate"):
        twinsim.capacity("llama3-8b", gpu="h100-sxm", serve=True, ttft_p99=1)
    with pytest.raises(twinsim.ScenarioError, match="serve=True"):
        twinsim.capacity("llama3-8b", tokens=1e11, days=7, gpu="h100-sxm", rate=2)
    with pytest.raises(twinsim.ScenarioError, match="serve=True"):
        twinsim.capacity("llama3-8b", tokens=1e11, days=7, gpu="h100-sxm", serve=True, rate=2, ttft_p99=1)


def test_compare_an_inference_batch():
    # a hand-made pair: TTFT 20 against 25 ms, TPOT 4 against 5 ms, one op per phase
    sim = {"inference": {"ttft_s": 0.020, "tpot_s": 0.004, "output_tokens_per_s": 1000,
                         "kv_cache_bytes_per_token": 4096,
                         "prefill": {"ops": [{"name": "attn.qkv.fwd", "time_s": 0.001, "count": 2}]},
                         "decode": {"ops": [{"name": "attn.qkv.fwd", "time_s": 0.0002, "count": 2}]}},
           "memory": {"peak_bytes": 300, "breakdown": {"params": 200, "kv_cache": 100}}}
    meas = {"inference": {"ttft_s": 0.025, "tpot_s": 0.005, "output_tokens_per_s": 800,
                          "kv_cache_bytes_per_token": 4096,
                          "prefill": {"passes": 1, "ops": {
                              "layer0.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.001},
                              "layer1.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.002}}},
                          "decode": {"passes": 3, "ops": {
                              "layer0.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025},
                              "layer1.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025}}}},
            "memory": {"peak_bytes": 400, "breakdown": {"params": 200, "kv_cache": 200}}}
    cmp = twinsim.compare(sim, meas)
    assert cmp.kind == "inference"
    assert cmp.ttft_s["rel_error"] == pytest.approx(-0.2)
    assert cmp.tpot_s["abs_error"] == pytest.approx(-0.001)
    ops = cmp.to_frame()
    assert sorted(ops["phase"]) == ["decode", "prefill"]
    prefill = ops[ops["phase"] == "prefill"].iloc[0]
    assert prefill["measured_s"] == pytest.approx(0.0015) and prefill["predicted_pass_s"] == pytest.approx(0.002)
    mem = cmp.memory_frame().set_index("category")
    assert mem.loc["kv_cache", "rel_error"] == pytest.approx(-0.5)


def test_compare_with_a_measured_run(root, tmp_path, twinsim_exe):
    # the executor runs tiny-gpt on one CPU rank; compare lines its measurement up with
    # the simulated report: both sides must come through unchanged
    scenario = root / "scenarios" / "exec" / "tiny-gpt-single.yaml"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    subprocess.run([str(twinsim_exe), "run", str(scenario), "--steps", "2", "--out", str(tmp_path)], check=True,
                   capture_output=True, env=env, timeout=120)
    measured = json.loads((tmp_path / "measured.json").read_text())
    rep = twinsim.simulate(scenario)
    cmp = twinsim.compare(rep, tmp_path / "measured.json")
    assert cmp.step_s["predicted"] == pytest.approx(rep.step_s, rel=1e-12)
    assert cmp.step_s["measured"] == pytest.approx(measured["time"]["step_s"], rel=1e-12)
    mem = cmp.memory_frame().set_index("category")
    # parameters: counted from the architecture on one side, from allocations on the other
    assert mem.loc["params", "predicted"] == mem.loc["params", "measured"]
    assert len(cmp.to_frame()) > 0


def test_hugging_face_config_as_a_dict(root):
    # a config.json loaded in Python maps like the file: Qwen3-8B, 8.19B parameters
    # (Qwen/Qwen3-8B model card: 8.2B total, 6.95B non-embedding)
    config = json.loads((root / "models" / "catalog" / "hf" / "qwen3-8b.json").read_text())
    scenario = {"model": {"hf_config": config}, "cluster": "dgx-h100", "plan": {"tp": 8},
                "training": {"global_batch": 8, "micro_batch": 1, "seq_len": 4096}}
    params = twinsim.memory(scenario).to_dict()["params"]
    assert params["total"] == pytest.approx(8.2e9, rel=0.01)
    by_name = twinsim.memory({**scenario, "model": "qwen3-8b"}).to_dict()["params"]
    assert by_name["total"] == params["total"]
    config["model_type"] = "qwen9"
    with pytest.raises(Exception, match="model_type"):
        twinsim.memory({**scenario, "model": {"hf_config": config}})


def test_describe_model_from_a_dict_a_path_and_a_name(root):
    # DeepSeek-V3: 671B main model, the MLA cache 576 values per layer (512 latent + 64 RoPE)
    path = root / "models" / "catalog" / "hf" / "deepseek-v3.json"
    by_path = twinsim.describe_model(path)
    by_dict = twinsim.describe_model(json.loads(path.read_text()))
    by_name = twinsim.describe_model("deepseek-v3")
    assert by_path["params"] == by_dict["params"] == by_name["params"]
    assert by_name["params"]["total"] == pytest.approx(671e9, rel=1e-3)
    assert by_name["kv_cache_bytes_per_token_bf16"] == (512 + 64) * 61 * 2
    assert by_name["model"]["mla"]["kv_lora_rank"] == 512
    small = twinsim.describe_model({"preset": "llama3-8b", "layers": 2})
    assert small["model"]["layers"] == 2
    with pytest.raises(twinsim.ScenarioError, match="num_key_value_heads"):
        twinsim.describe_model({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                                "num_attention_heads": 4, "num_key_value_heads": 3,
                                "intermediate_size": 128, "vocab_size": 100})


def test_serve_matches_the_command_and_prices_prefix_caching(root, twinsim_exe):
    import subprocess
    path = root / "scenarios" / "inference" / "llama2-7b-a100.yaml"
    r = twinsim.serve(path, requests=50, rate=4, seed=3)
    cli = json.loads(subprocess.run([str(twinsim_exe), "serve", str(path), "--requests", "50", "--rate", "4",
                                     "--seed", "3", "--json"], capture_output=True, text=True, check=True).stdout)
    assert r == cli  # one library call behind both
    cached = twinsim.serve(path, requests=50, rate=4, seed=3, prefix_tokens=96, prefix_hit_rate=1)
    assert cached["cached_prompt_tokens"] == 50 * 96
    assert cached["ttft"]["p50_s"] < r["ttft"]["p50_s"]
    with pytest.raises(twinsim.ScenarioError, match="rate"):
        twinsim.serve(path, rate=0)
    with pytest.raises(twinsim.ScenarioError, match="prefix_hit_rate"):
        twinsim.serve(path, prefix_tokens=16, prefix_hit_rate=2)
    # the router and swap space as the command's --router and --swap-space
    cli = json.loads(subprocess.run([str(twinsim_exe), "serve", str(path), "--requests", "50", "--rate", "4", "--seed",
                                     "3", "--router", "round_robin", "--swap-space", "2", "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    assert twinsim.serve(path, requests=50, rate=4, seed=3, router="round_robin", swap_space_gib=2) == cli


def test_gemm_clock_reports_the_power_limit(small_scenario):
    # the H100 carries power_limited_gemm: on one GPU per layer (DP 8) a Llama-3-8B step's
    # layers fill their passes with GEMMs, so their clock falls below the curves'; under TP 8
    # the collectives between them idle the GPU enough to keep it; the A100 carries no figures,
    # so its clock stays 1 (docs/SCENARIO.md, time.gemm_clock)
    dp8 = small_scenario.set("plan.tp", 1).set("plan.dp", 8).set("plan.sequence_parallel", False)
    assert 0.8 < twinsim.simulate(dp8).to_dict()["time"]["gemm_clock"] < 0.95
    assert twinsim.simulate(small_scenario).to_dict()["time"]["gemm_clock"] == 1.0
    a100 = twinsim.simulate(dp8.set("cluster", "dgx-a100-80gb")).to_dict()["time"]["gemm_clock"]
    assert a100 == 1.0
