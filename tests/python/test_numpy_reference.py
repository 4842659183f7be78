"""The executor against an independent numpy float64 re-implementation (numpy_reference.py)
of GPT-2 and Llama, through the user's own path: `twinsim run` on a token file with
`--save-initial`, `twinsim checkpoint merge --names huggingface --optimizer`, and the
merged files read with the `safetensors` package into transformers' key layout.

For tiny-gpt, tiny-llama, tiny-moe (DeepSeekMoE's layout) and tiny-mla (DeepSeek-V2's), on one rank and on TP2 x PP2 x DP2 with ZeRO-1 (8 ranks),
and the two models with experts also on DP2 x EP2 (each rank holds half the experts),
the reference takes the merged step-0 weights and the step's tokens and must give the
executor's first loss (1e-6 relative), its gradients (read back from Adam's first moment,
exp_avg = (1 - beta1) g; 1e-5 relative per tensor) and the weights after one AdamW step
(1e-5 relative over the model). Each planted bug in the reference (a missing 1/sqrt(d),
a wrong GQA head map, interleaved RoPE pairs, the exact GELU, Mixtral's renormalised
expert weights, Llama's RoPE pairs for DeepSeek-V2's) must break the agreement,
so the comparison can fail.
"""
import hashlib
import json
import pathlib
import shutil
import struct
import subprocess

import numpy as np
import pytest

import numpy_reference as ref

safetensors_numpy = pytest.importorskip("safetensors.numpy")

SEQ, BATCH = 64, 8
LR, BETA1, BETA2, EPS, WD = 1e-3, 0.9, 0.999, 1e-5, 0.1
# eps 1e-5 rather than 1e-8: AdamW's first update is g / (|g| + eps), a sign for |g| >> eps,
# so gradients that are zero in exact arithmetic (GPT-2's key bias) and fp32-rounded in the
# executor would flip it; with 1e-5 every update depends smoothly on its gradient.
MODELS = {
    "tiny-gpt": dict(loss=ref.gpt2_loss, heads=(4,)),
    "tiny-llama": dict(loss=ref.llama_loss, heads=(8, 4)),
    "tiny-moe": dict(loss=ref.llama_loss, heads=(8, 4, 2)),  # heads, kv heads, top_k
    "tiny-mla": dict(loss=ref.llama_loss, heads=(8, 8, 2)),  # DeepSeek-V2's latent attention
}
PLANS = {"single": dict(tp=1, pp=1, dp=1, zero=0, ranks=1), "tp2-pp2-dp2-zero1": dict(tp=2, pp=2, dp=2, zero=1, ranks=8),
         # expert parallelism: each rank holds half of every MoE layer's experts (models with experts)
         "dp2-ep2": dict(tp=1, pp=1, dp=2, zero=0, ep=2, ranks=2),
         # ... under ZeRO-3: the experts' segments sharded over their expert-data-parallel pair,
         # the rest over the 4 DP ranks; the merge joins each over its own group
         "dp4-ep2-zero3": dict(tp=1, pp=1, dp=4, zero=3, ep=2, ranks=4)}


def _runs_plan(model, plan):
    return PLANS[plan].get("ep", 1) == 1 or model in ("tiny-moe", "tiny-mla")


def _tokens():
    return np.array([(i * 7919 + (i // 13) * 104729) % 512 for i in range(20000)], dtype=np.int64)


def _scenario(folder, model, plan, precision="fp32"):
    path = folder / f"{model}-{plan}-{precision}.yaml"
    p = PLANS[plan]
    sp = p["tp"] > 1 and model not in ("tiny-moe", "tiny-mla")  # the executor's MoE and MLA run without SP
    path.write_text(f"""name: reference-{model}-{plan}
model: {model}
cluster: host
training:
  seq_len: {SEQ}
  global_batch: {BATCH}
  micro_batch: 2
  precision: {precision}
  optimizer: {{name: adam, lr: {LR}, beta1: {BETA1}, beta2: {BETA2}, eps: {EPS}, weight_decay: {WD}}}
  data: {{path: tokens.bin, dtype: uint16}}
plan: {{tp: {p['tp']}, pp: {p['pp']}, dp: {p['dp']}, ep: {p.get('ep', 1)}, zero: {p['zero']}, sequence_parallel: {str(sp).lower()}}}
""")
    return path


def _run(tools, scenario, ranks, ckpt, out):
    (start, env), exe = tools["mpirun"], tools["exe"]
    cmd = [*start, "-np", str(ranks), str(exe), "run", str(scenario), "--steps", "1",
           "--checkpoint-dir", str(ckpt), "--save-initial", "--keep", "2", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    return json.loads((out / "measured.json").read_text())


def _merge(tools, scenario, ckpt, out, *extra):
    cmd = [str(tools["exe"]), "checkpoint", "merge", str(scenario), "--checkpoint-dir", str(ckpt), "--out", str(out), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, twinsim_exe, mpirun):
    """Every (model, plan) run once: its measured.json and merged step-0 / step-1 files;
    "tools": the binary and mpirun the helpers start."""
    folder = tmp_path_factory.mktemp("reference")
    tools = {"exe": twinsim_exe, "mpirun": mpirun}
    _tokens().astype("<u2").tofile(folder / "tokens.bin")
    done = {}
    for model in MODELS:
        for plan, p in PLANS.items():
            if not _runs_plan(model, plan):
                continue
            scenario = _scenario(folder, model, plan)
            ckpt = folder / f"ckpt-{model}-{plan}"
            measured = _run(tools, scenario, p["ranks"], ckpt, folder / f"out-{model}-{plan}")
            files = {}
            for step in (0, 1):
                for names in ("huggingface", "twinsim"):
                    out = folder / f"{model}-{plan}-step{step}-{names}.safetensors"
                    r = _merge(tools, scenario, ckpt, out, "--step", str(step), "--names", names, "--optimizer")
                    assert r.returncode == 0, r.stderr
                    files[step, names] = out
            done[model, plan] = dict(scenario=scenario, ckpt=ckpt, measured=measured, files=files)
    done["tools"] = tools
    return done


def _batch():
    """The step's sequences: sequence i of a token file is the tokens from i * seq_len on."""
    tokens = _tokens()
    inputs = np.stack([tokens[i * SEQ:(i + 1) * SEQ] for i in range(BATCH)])
    targets = np.stack([tokens[i * SEQ + 1:(i + 1) * SEQ + 1] for i in range(BATCH)])
    return inputs, targets


def _weights(merged):
    return {k: v for k, v in merged.items() if not k.endswith((".exp_avg", ".exp_avg_sq", ".master"))}


_REFERENCES = {}


def _reference(model, weights, planted=None):
    # Every plan of a model starts from the same weights (test_initial_weights_merge_the_same_
    # from_every_plan), so the float64 reference, the slow part, is computed once per model and
    # bug for the weights' exact bytes: a plan whose weights differ gets its own.
    key = (model, planted, hashlib.sha256(b"".join(k.encode() + v.tobytes() for k, v in sorted(weights.items()))).digest())
    if key not in _REFERENCES:
        inputs, targets = _batch()
        spec = MODELS[model]
        _REFERENCES[key] = ref.loss_and_grads(
            lambda w: spec["loss"](w, inputs, targets, *spec["heads"], planted=planted), weights)
    return _REFERENCES[key]


def _relative(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b))


def _expected_hf_shapes(model):
    """transformers' state-dict keys and shapes for the tiny models (hidden 256, vocab 512,
    4 layers): GPT2LMHeadModel (Conv1D weights [in, out], head tied and not stored),
    LlamaForCausalLM (nn.Linear [out, in]; GQA: k/v 4 heads of 32) and DeepSeekMoE's
    DeepseekForCausalLM (Llama's, with layers 1-3 a router [8, 256], 8 experts and one
    shared expert of width 128)."""
    shapes = {}
    if model == "tiny-gpt":
        shapes.update({"transformer.wte.weight": (512, 256), "transformer.wpe.weight": (256, 256),
                       "transformer.ln_f.weight": (256,), "transformer.ln_f.bias": (256,)})
        for i in range(4):
            h = f"transformer.h.{i}."
            shapes.update({h + "ln_1.weight": (256,), h + "ln_1.bias": (256,), h + "attn.c_attn.weight": (256, 768),
                           h + "attn.c_attn.bias": (768,), h + "attn.c_proj.weight": (256, 256),
                           h + "attn.c_proj.bias": (256,), h + "ln_2.weight": (256,), h + "ln_2.bias": (256,),
                           h + "mlp.c_fc.weight": (256, 1024), h + "mlp.c_fc.bias": (1024,),
                           h + "mlp.c_proj.weight": (1024, 256), h + "mlp.c_proj.bias": (256,)})
    else:
        shapes.update({"model.embed_tokens.weight": (512, 256), "model.norm.weight": (256,),
                       "lm_head.weight": (512, 256)})
        for i in range(4):
            h = f"model.layers.{i}."
            shapes.update({h + "input_layernorm.weight": (256,), h + "self_attn.q_proj.weight": (256, 256),
                           h + "self_attn.k_proj.weight": (128, 256), h + "self_attn.v_proj.weight": (128, 256),
                           h + "self_attn.o_proj.weight": (256, 256), h + "post_attention_layernorm.weight": (256,),
                           h + "mlp.gate_proj.weight": (688, 256), h + "mlp.up_proj.weight": (688, 256),
                           h + "mlp.down_proj.weight": (256, 688)})
            if model == "tiny-mla":  # latent attention: Q bottleneck 96, KV latent 64 + RoPE key 16
                for k in ("q_proj", "k_proj", "v_proj"):
                    del shapes[h + f"self_attn.{k}.weight"]
                shapes.update({h + "self_attn.q_a_proj.weight": (96, 256), h + "self_attn.q_a_layernorm.weight": (96,),
                               h + "self_attn.q_b_proj.weight": (8 * 48, 96),
                               h + "self_attn.kv_a_proj_with_mqa.weight": (64 + 16, 256),
                               h + "self_attn.kv_a_layernorm.weight": (64,), h + "self_attn.kv_b_proj.weight": (8 * 64, 64),
                               h + "self_attn.o_proj.weight": (256, 8 * 32)})
            if model in ("tiny-moe", "tiny-mla") and i > 0:
                for k in ("gate_proj", "up_proj", "down_proj"):
                    del shapes[h + f"mlp.{k}.weight"]
                shapes[h + "mlp.gate.weight"] = (8, 256)
                for ffn in [f"mlp.experts.{e}." for e in range(8)] + ["mlp.shared_experts."]:
                    shapes.update({h + ffn + "gate_proj.weight": (128, 256), h + ffn + "up_proj.weight": (128, 256),
                                   h + ffn + "down_proj.weight": (256, 128)})
    return shapes


@pytest.mark.parametrize("model", MODELS)
def test_merged_keys_are_transformers_layout(runs, model):
    merged = safetensors_numpy.load_file(runs[model, "single"]["files"][0, "huggingface"])
    shapes = {k: tuple(v.shape) for k, v in _weights(merged).items()}
    assert shapes == _expected_hf_shapes(model)
    for k in shapes:
        assert merged[k + ".exp_avg"].shape == merged[k].shape and merged[k + ".exp_avg_sq"].shape == merged[k].shape


@pytest.mark.parametrize("model", MODELS)
def test_initial_weights_merge_the_same_from_every_plan(runs, model):
    # the initial weights do not depend on the plan: the 8-rank files joined must be the
    # single rank's, bit for bit (TP shards, pipeline stages, DP padding and ZeRO shares undone)
    single = safetensors_numpy.load_file(runs[model, "single"]["files"][0, "twinsim"])
    for name in PLANS:
        if name == "single" or not _runs_plan(model, name):
            continue
        plan = safetensors_numpy.load_file(runs[model, name]["files"][0, "twinsim"])
        assert single.keys() == plan.keys(), name
        for k in single:
            assert np.array_equal(single[k], plan[k]), (name, k)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("model", MODELS)
def test_executor_step_equals_numpy_float64_reference(runs, model, plan):
    if not _runs_plan(model, plan):
        pytest.skip(f"{model} has no experts to split")
    run = runs[model, plan]
    before = _weights(safetensors_numpy.load_file(run["files"][0, "huggingface"]))
    after = safetensors_numpy.load_file(run["files"][1, "huggingface"])
    loss, grads = _reference(model, before)

    assert abs(run["measured"]["losses"][0] - loss) <= 1e-6 * loss

    worst_grad = max(_relative(after[k + ".exp_avg"] / (1 - BETA1), grads[k]) for k in before)
    assert worst_grad < 1e-5

    sq_diff = sq_norm = 0.0
    for k, p0 in before.items():
        p0 = p0.astype(np.float64)
        decay = WD if p0.ndim == 2 else 0.0  # matrices only: not biases and norm weights
        p1, m, v = ref.adamw_first_step(p0, grads[k], LR, BETA1, BETA2, EPS, decay)
        sq_diff += float(np.sum((after[k] - p1) ** 2))
        sq_norm += float(np.sum(p1 ** 2))
        # the executor's (1 - beta2) is float32's 1 - 0.999f, 1.3e-5 off the decimal value
        assert _relative(after[k + ".exp_avg_sq"], v) < 1e-4, k
        # AdamW's arithmetic alone, on the executor's own gradient: to float32 rounding
        p1_own, _, _ = ref.adamw_first_step(p0, after[k + ".exp_avg"] / (1 - BETA1), LR, BETA1, BETA2, EPS, decay)
        assert _relative(after[k], p1_own) < 1e-6, k
    assert np.sqrt(sq_diff / sq_norm) < 1e-5


@pytest.mark.parametrize("model,planted", [("tiny-gpt", "no_scale"), ("tiny-gpt", "gelu_erf"),
                                           ("tiny-llama", "no_scale"), ("tiny-llama", "gqa_modulo"),
                                           ("tiny-llama", "rope_interleaved"),
                                           ("tiny-moe", "topk_renormalized"),
                                           ("tiny-mla", "rope_rotate_half"), ("tiny-mla", "no_scale")])
def test_a_planted_bug_breaks_the_agreement(runs, model, planted):
    run = runs[model, "single"]
    before = _weights(safetensors_numpy.load_file(run["files"][0, "huggingface"]))
    after = safetensors_numpy.load_file(run["files"][1, "huggingface"])
    loss, grads = _reference(model, before, planted)
    worst_grad = max(_relative(after[k + ".exp_avg"] / (1 - BETA1), grads[k]) for k in before)
    assert abs(run["measured"]["losses"][0] - loss) > 1e-6 * loss or worst_grad > 1e-5


def test_the_autodiff_matches_finite_differences():
    rng = np.random.default_rng(0)
    hidden, vocab, ffn, heads, kv_heads = 8, 11, 12, 4, 2
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (vocab, hidden)), "model.norm.weight": 1 + rng.normal(0, 0.1, hidden),
         "lm_head.weight": rng.normal(0, 0.5, (vocab, hidden))}
    n = "model.layers.0."
    for name, shape in [("input_layernorm.weight", (hidden,)), ("self_attn.q_proj.weight", (hidden, hidden)),
                        ("self_attn.k_proj.weight", (kv_heads * 2, hidden)), ("self_attn.v_proj.weight", (kv_heads * 2, hidden)),
                        ("self_attn.o_proj.weight", (hidden, hidden)), ("post_attention_layernorm.weight", (hidden,)),
                        ("mlp.gate_proj.weight", (ffn, hidden)), ("mlp.up_proj.weight", (ffn, hidden)),
                        ("mlp.down_proj.weight", (hidden, ffn))]:
        w[n + name] = rng.normal(0, 0.5, shape) + (1.0 if "layernorm" in name else 0.0)
    gw = {"transformer.wte.weight": rng.normal(0, 0.5, (vocab, hidden)), "transformer.wpe.weight": rng.normal(0, 0.5, (5, hidden)),
          "transformer.ln_f.weight": 1 + rng.normal(0, 0.1, hidden), "transformer.ln_f.bias": rng.normal(0, 0.1, hidden)}
    h = "transformer.h.0."
    for name, shape in [("ln_1.weight", (hidden,)), ("ln_1.bias", (hidden,)), ("attn.c_attn.weight", (hidden, 3 * hidden)),
                        ("attn.c_attn.bias", (3 * hidden,)), ("attn.c_proj.weight", (hidden, hidden)),
                        ("attn.c_proj.bias", (hidden,)), ("ln_2.weight", (hidden,)), ("ln_2.bias", (hidden,)),
                        ("mlp.c_fc.weight", (hidden, ffn)), ("mlp.c_fc.bias", (ffn,)), ("mlp.c_proj.weight", (ffn, hidden)),
                        ("mlp.c_proj.bias", (hidden,))]:
        gw[h + name] = rng.normal(0, 0.5, shape) + (1.0 if name.startswith("ln") and "weight" in name else 0.0)
    # the same layer with DeepSeekMoE's block: a router over 3 experts (top 2) and a shared one
    mw = {k: v for k, v in w.items() if ".mlp." not in k}
    mw[n + "mlp.gate.weight"] = rng.normal(0, 0.5, (3, hidden))
    for ffn in ["mlp.experts.0.", "mlp.experts.1.", "mlp.experts.2.", "mlp.shared_experts."]:
        mw[n + ffn + "gate_proj.weight"] = rng.normal(0, 0.5, (4, hidden))
        mw[n + ffn + "up_proj.weight"] = rng.normal(0, 0.5, (4, hidden))
        mw[n + ffn + "down_proj.weight"] = rng.normal(0, 0.5, (hidden, 4))
    # ... and with DeepSeek-V2's latent attention: Q bottleneck 3, latent 5, nope 2 + rope 2, V 3
    aw = {k: v for k, v in mw.items() if ".self_attn." not in k}
    for name, shape in [("q_a_proj.weight", (3, hidden)), ("q_b_proj.weight", (heads * 4, 3)),
                        ("kv_a_proj_with_mqa.weight", (5 + 2, hidden)), ("kv_b_proj.weight", (heads * 5, 5)),
                        ("o_proj.weight", (hidden, heads * 3))]:
        aw[n + "self_attn." + name] = rng.normal(0, 0.5, shape)
    aw[n + "self_attn.q_a_layernorm.weight"] = 1 + rng.normal(0, 0.1, 3)
    aw[n + "self_attn.kv_a_layernorm.weight"] = 1 + rng.normal(0, 0.1, 5)
    ids, targets = rng.integers(0, vocab, (2, 5)), rng.integers(0, vocab, (2, 5))
    cases = [(lambda v: ref.llama_loss(v, ids, targets, heads, kv_heads, 2), aw),
             (lambda v: ref.llama_loss(v, ids, targets, heads, kv_heads), w),
             (lambda v: ref.gpt2_loss(v, ids, targets, 2), gw),
             (lambda v: ref.llama_loss(v, ids, targets, heads, kv_heads, 2), mw)]
    for loss_fn, weights in cases:
        _, grads = ref.loss_and_grads(loss_fn, weights)
        for name, value in weights.items():
            for _ in range(3):
                i = tuple(int(rng.integers(0, s)) for s in value.shape)
                plus, minus = dict(weights), dict(weights)
                plus[name], minus[name] = value.copy(), value.copy()
                plus[name][i] += 1e-6
                minus[name][i] -= 1e-6
                numeric = (ref.loss_and_grads(loss_fn, plus)[0] - ref.loss_and_grads(loss_fn, minus)[0]) / 2e-6
                assert abs(numeric - grads[name][i]) <= 1e-6 * max(1.0, abs(numeric)), (name, i)


# ---------------------------------------------------------------- refusals and the 16-bit path

@pytest.mark.parametrize("model,model_type", [("tiny-gpt", "gpt2"), ("tiny-llama", "llama"), ("tiny-moe", "deepseek"),
                                              ("tiny-mla", "deepseek_v2")])
def test_merge_writes_the_transformers_config(runs, tmp_path, model, model_type):
    run = runs[model, "tp2-pp2-dp2-zero1"]
    config = tmp_path / "config.json"
    r = _merge(runs["tools"], run["scenario"], run["ckpt"], tmp_path / "model.safetensors", "--names", "huggingface",
               "--hf-config", str(config))
    assert r.returncode == 0, r.stderr
    c = json.loads(config.read_text())
    assert c["model_type"] == model_type and c["torch_dtype"] == "float32"
    if model == "tiny-gpt":  # the reference's numerics: tanh GeLU, eps 1e-5, the head tied
        assert (c["n_layer"], c["n_embd"], c["n_head"], c["activation_function"]) == (4, 256, 4, "gelu_new")
        assert c["layer_norm_epsilon"] == 1e-5 and c["tie_word_embeddings"] is True
    else:
        kv_heads = 8 if model == "tiny-mla" else 4
        assert (c["num_attention_heads"], c["num_key_value_heads"], c["rms_norm_eps"], c["rope_theta"]) == (8, kv_heads, 1e-5, 1e4)
    if model == "tiny-mla":
        assert (c["q_lora_rank"], c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]) == (96, 64, 32, 16, 32)
        assert (c["topk_method"], c["routed_scaling_factor"]) == ("greedy", 1.0)
    if model in ("tiny-moe", "tiny-mla"):  # the router the reference computes: softmax, top 2 unnormalised
        assert (c["n_routed_experts"], c["num_experts_per_tok"], c["n_shared_experts"]) == (8, 2, 1)
        assert (c["scoring_func"], c["norm_topk_prob"], c["first_k_dense_replace"]) == ("softmax", False, 1)
    r = _merge(runs["tools"], run["scenario"], run["ckpt"], tmp_path / "m2.safetensors", "--hf-config", str(tmp_path / "c2.json"))
    assert r.returncode != 0 and "--hf-config" in r.stderr and "--names huggingface" in r.stderr


def test_merge_refuses_another_plan_a_missing_and_a_truncated_file(runs, tmp_path):
    run = runs["tiny-gpt", "tp2-pp2-dp2-zero1"]
    other_plan = _scenario(run["scenario"].parent, "tiny-gpt", "single")
    r = _merge(runs["tools"], other_plan, run["ckpt"], tmp_path / "x.safetensors")
    assert r.returncode != 0 and "twinsim.plan" in r.stderr and "rank-0.safetensors" in r.stderr
    broken = tmp_path / "ckpt"
    shutil.copytree(run["ckpt"], broken)
    (broken / "step-1" / "rank-5.safetensors").unlink()
    r = _merge(runs["tools"], run["scenario"], broken, tmp_path / "x.safetensors")
    assert r.returncode != 0 and "rank-5.safetensors" in r.stderr
    shutil.copy(run["ckpt"] / "step-1" / "rank-5.safetensors", broken / "step-1")
    data = (broken / "step-1" / "rank-3.safetensors").read_bytes()
    (broken / "step-1" / "rank-3.safetensors").write_bytes(data[: len(data) // 2])
    r = _merge(runs["tools"], run["scenario"], broken, tmp_path / "x.safetensors")
    assert r.returncode != 0 and "rank-3.safetensors" in r.stderr
    r = _merge(runs["tools"], run["scenario"], run["ckpt"], tmp_path / "x.safetensors", "--step", "7")
    assert r.returncode != 0 and "step-7" in r.stderr
    assert not (tmp_path / "x.safetensors").exists()  # nothing written by a refused merge


def _read_raw(path):
    """A safetensors file by hand (BF16 has no numpy type): name -> (dtype, shape, float32 values)."""
    data = pathlib.Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        raw = data[8 + n + lo:8 + n + hi]
        if t["dtype"] == "BF16":
            values = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, "<f4")
        out[name] = (t["dtype"], tuple(t["shape"]), values.reshape(t["shape"]))
    return header.get("__metadata__", {}), out


def test_bf16_run_merges_to_bf16_weights_and_fp32_masters(runs, tmp_path):
    folder = runs["tiny-llama", "single"]["scenario"].parent
    scenario = _scenario(folder, "tiny-llama", "tp2-pp2-dp2-zero1", precision="bf16")
    ckpt = tmp_path / "ckpt"
    _run(runs["tools"], scenario, 8, ckpt, tmp_path / "out")
    r = _merge(runs["tools"], scenario, ckpt, tmp_path / "m.safetensors", "--step", "0", "--names", "huggingface", "--optimizer")
    assert r.returncode == 0, r.stderr
    metadata, tensors = _read_raw(tmp_path / "m.safetensors")
    assert metadata["format"] == "pt" and metadata["twinsim.names"] == "huggingface"
    assert metadata["twinsim.steps_done"] == "0"
    weights = {k: t for k, t in tensors.items() if "." + k.rsplit(".", 1)[-1] not in (".exp_avg", ".exp_avg_sq", ".master")}
    assert {k: t[1] for k, t in weights.items()} == _expected_hf_shapes("tiny-llama")
    for k, (dtype, shape, values) in weights.items():
        assert dtype == "BF16"
        master_dtype, master_shape, master = tensors[k + ".master"]
        assert master_dtype == "F32" and master_shape == shape
        assert np.array_equal(master, values), k  # step 0: the masters are the bf16 weights widened
