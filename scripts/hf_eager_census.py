#!/usr/bin/env python3
"""The element-wise kernels Hugging Face's eager Llama runs in a training step, counted, and
what autograd keeps for the backward.

Runs transformers' LlamaForCausalLM (a tiny config whose sizes tell the tensors apart) on
the CPU in PyTorch's standard mixed precision: fp32 parameters, bf16 autocast, SDPA (or, with
`--params bf16`, on a model loaded in bf16 without autocast, as DeepSpeed's bf16 mode and
FSDP with bf16 parameters run it: `from_pretrained(..., dtype=torch.bfloat16)`). Every
ATen op of one forward and backward is logged (TorchDispatchMode) and charged to the op-list
row whose module or autograd node issued it (forward: the module being run; backward: a
pre-hook on each autograd node records the row its forward ran in). GEMMs and the attention
kernel are the op list's own and left out; every other op is a kernel the op list's fused
Megatron kernels do not have. Each is reduced to bytes per element of the tensor it walks
(tokens x hidden, x query width, x key/value width, x FFN width, a layer's weights, tokens
x vocabulary), so the table holds for any Llama-architecture size. The tensors saved for the
backward (saved_tensors_hooks, each storage once) are counted the same way. Qwen2ForCausalLM
(q, k, v biases) and Qwen3ForCausalLM (QK-norm) are counted too, and what they add to or take
from Llama's census is printed as their own entries.

Prints the tables of models/hf_eager_census.cpp, after a commented line per op. The autocast
op lists of CPU and CUDA agree on every op these models run (linear and SDPA in bf16; pow and
rsqrt see fp32 inputs either way); the attention kernel's own helpers (cuDNN's, flash's)
differ by device and are the attention op's.
Usage: python3 scripts/hf_eager_census.py [--params bf16]   (needs torch and transformers; no GPU)
"""
import argparse
import collections
import contextlib

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

B, S, H, HEADS, HEAD_DIM, KV_HEADS, FFN, VOCAB = 2, 20, 96, 6, 24, 2, 160, 300
T = B * S
Q, KV = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
# tensors by size (all distinct in this config): activations, their halves (RoPE's), weights
EXTENT = {T * H: "hidden", T * Q: "q", T * Q // 2: "q", T * KV: "kv", T * KV // 2: "kv", T * FFN: "ffn",
          T * VOCAB: "vocab", H * Q: "weights", H * KV: "weights", H * FFN: "weights", H * VOCAB: "weights"}
UNITS = {"hidden": T * H, "q": T * Q, "kv": T * KV, "ffn": T * FFN, "vocab": T * VOCAB}
# a row's weights, the unit of its weight-sized kernels (the casts of each matrix, their grads)
ROW_WEIGHTS = {"attn.qkv": H * (Q + 2 * KV), "attn.proj": Q * H, "mlp.gate_up": 2 * H * FFN, "mlp.down": FFN * H,
               "head.logits": H * VOCAB, "embedding.lookup": H * VOCAB}
MODULE_ROW = {"input_layernorm": "attn.norm", "q_proj": "attn.qkv", "k_proj": "attn.qkv", "v_proj": "attn.qkv",
              "o_proj": "attn.proj", "post_attention_layernorm": "mlp.norm", "gate_proj": "mlp.gate_up",
              "up_proj": "mlp.gate_up", "down_proj": "mlp.down", "norm": "head.norm", "lm_head": "head.logits",
              "embed_tokens": "embedding.lookup", "q_norm": "attn.qk_norm", "k_norm": "attn.qk_norm"}
SKIP = {"view", "_unsafe_view", "t", "transpose", "detach", "expand", "unsqueeze", "slice", "select", "permute",
        "alias", "reshape", "as_strided", "squeeze", "split", "empty", "lift_fresh", "ones_like", "arange",
        "mm", "bmm", "addmm", "embedding", "embedding_dense_backward", "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_flash_attention_for_cpu_backward", "nll_loss_forward", "nll_loss_backward",
        "constant_pad_nd", "zeros", "new_zeros"}

state = {"row": "model", "layer": None, "pass": "fwd"}
# "autocast": fp32 parameters under bf16 autocast; "bf16": a bf16 model, no autocast
MODE = {"params": "autocast"}


def precision():
    """The forward's precision context: bf16 autocast, or none (the model is bf16 already)."""
    if MODE["params"] == "bf16":
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=torch.bfloat16)
node_row = {}


def current_row(stack):
    """The op-list row of the innermost module on the stack."""
    for name in reversed(stack):
        leaf = name.split(".")[-1]
        if leaf in MODULE_ROW:
            return MODULE_ROW[leaf]
        if leaf == "mlp":
            return "mlp.act"
        if leaf == "self_attn":
            return "attn.rope"  # RoPE and attention's casts; sorted out below
        if leaf.isdigit():
            return "residual"
    return "model"


class RowOfNodes(TorchFunctionMode):
    """Forward: remember the row each autograd node was made in."""
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.grad_fn not in node_row:
                node_row[t.grad_fn] = (state["row"], state["layer"])
                for next_fn, _ in t.grad_fn.next_functions:  # AccumulateGrad and casts of leaves
                    if next_fn is not None and next_fn not in node_row:
                        node_row[next_fn] = (state["row"], state["layer"])
        return out


class Census(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.rows = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = str(func.overloadpacket.__name__)  # aten.mul.Tensor -> mul
        ins = [x for x in torch.utils._pytree.tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        outs = [x for x in torch.utils._pytree.tree_flatten(out)[0] if isinstance(x, torch.Tensor)]
        self.rows.append((state["pass"], state["row"], state["layer"], name, ins, outs))
        return out


def census(family):
    """One forward and backward of `family` ("llama", "qwen2": q, k, v biases, "qwen3": QK-norm)
    at the census's sizes: the kernel table and the saved-tensor table."""
    import transformers
    node_row.clear()
    state.update(row="model", layer=None)
    state["pass"] = "fwd"
    torch.manual_seed(0)
    sizes = dict(hidden_size=H, intermediate_size=FFN, num_hidden_layers=2, num_attention_heads=HEADS,
                 head_dim=HEAD_DIM, num_key_value_heads=KV_HEADS, vocab_size=VOCAB, tie_word_embeddings=False,
                 attn_implementation="sdpa")
    config, model_class = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
                           "qwen3": ("Qwen3Config", "Qwen3ForCausalLM")}[family]
    model = getattr(transformers, model_class)(getattr(transformers, config)(**sizes))
    if MODE["params"] == "bf16":
        model = model.to(torch.bfloat16)
    stack = []
    for name, module in model.named_modules():
        def pre(_m, _a, name=name):
            stack.append(name)
            state["row"] = current_row(stack)
            layer = [p for p in name.split(".") if p.isdigit()]
            state["layer"] = int(layer[0]) if layer else None

        def post(_m, _a, _o):
            stack.pop()
            state["row"] = current_row(stack)
            layer = [p for p in (stack[-1] if stack else "").split(".") if p.isdigit()]
            state["layer"] = int(layer[0]) if layer else None
        module.register_forward_pre_hook(pre)
        module.register_forward_hook(post)
    ids = torch.randint(0, VOCAB, (B, S))
    logged = Census()
    with logged, RowOfNodes():
        with precision():
            loss = model(input_ids=ids, labels=ids).loss
    for node, (row, layer) in node_row.items():
        def hook(_grads, row=row, layer=layer):
            state["row"], state["layer"] = row, layer
        node.register_prehook(hook)
    state["pass"] = "bwd"
    with logged:
        loss.backward()
    return report(logged.rows), report_saved(model, ids)


def main():
    """The Llama census, then what each variant adds or takes away (its census less Llama's)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", choices=("autocast", "bf16"), default="autocast",
                    help="fp32 parameters under bf16 autocast (default), or a bf16 model without autocast")
    MODE["params"] = ap.parse_args().params
    kernels, saved = census("llama")
    print_tables("all", kernels, saved)
    for family, variant in (("qwen2", "qkv_bias"), ("qwen3", "qk_norm")):
        k, s = census(family)
        diff_k = {key: [k.get(key, [0, 0])[0] - kernels.get(key, [0, 0])[0], k.get(key, [0, 0])[1] - kernels.get(key, [0, 0])[1]]
                  for key in set(k) | set(kernels)}
        diff_s = {key: s.get(key, 0) - saved.get(key, 0) for key in set(s) | set(saved)}
        print_tables(variant, {key: v for key, v in diff_k.items() if v != [0, 0]},
                     {key: v for key, v in diff_s.items() if v != 0})


def print_tables(variant, kernels, saved):
    print(f"    // {variant}")
    for (row, pas, ext), (per_elem, count) in sorted(kernels.items(), key=lambda kv: (kv[0][0], kv[0][1] == "bwd", kv[0][2])):
        print(f"    {{EagerVariant::{variant}, op_names::k{camel(row)}, {'true' if pas == 'bwd' else 'false'}, "
              f"EagerExtent::{ext}, {per_elem:g}, {count}}},")
    print(f"    // {variant}: saved for the backward (weights: per element of the layer's or the head's)")
    for (part, ext), per_elem in sorted(saved.items()):
        print(f"    {{EagerVariant::{variant}, {'true' if part == 'head' else 'false'}, EagerExtent::{ext}, {per_elem:g}}},")


def report_saved(model, ids):
    """What autograd keeps from the forward for the backward, in a layer (layer 0) and in the
    head: each storage once, by extent. Parameters are not activations; their bf16 casts are
    (autocast's cache holds them from the forward to the backward)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    weights = {"layer": H * (Q + 2 * KV) + Q * H + 3 * H * FFN, "head": H * VOCAB}
    seen, table = set(), collections.defaultdict(float)

    def pack(t):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in seen or key in params or storage.nbytes() == 0:
            return t
        seen.add(key)
        if state["layer"] not in (None, 0) or state["row"] == "model" and state["layer"] is None and \
                not storage.nbytes() // t.element_size() == T * VOCAB:
            return t  # layers after the first repeat it; the embedding keeps only token ids
        part = "layer" if state["layer"] == 0 else "head"
        ext = EXTENT.get(storage.nbytes() // t.element_size(), "rows")
        unit = weights[part] if ext == "weights" else UNITS.get(ext)
        if unit:
            table[(part, ext)] += storage.nbytes() / unit
        return t

    state["pass"] = "fwd"
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with precision():
            model(input_ids=ids, labels=ids).loss
    return table


def extent_of(tensors):
    sizes = [t.numel() for t in tensors]
    for n in sorted(sizes, reverse=True):
        if n in EXTENT:
            return EXTENT[n]
    return "rows"  # per token or per channel: negligible bytes, a launch each


def report(rows):
    table = collections.defaultdict(lambda: [0.0, 0])
    residuals = {"fwd": 0, "bwd": 0}
    for pas, row, layer, name, ins, outs in rows:
        if name in SKIP - {"nll_loss_backward"} or (layer is not None and layer != 0):
            continue
        if name == "_to_copy" and ins and not ins[0].is_floating_point():
            continue
        if name == "cat" and any(t.numel() == 0 for t in ins):
            name = "cache_cat"  # DynamicCache's first update: a copy of K or V
        if name in ("new_empty_strided", "empty_strided", "empty_like"):
            continue  # an allocation, no kernel
        if row == "attn.rope" and (name in ("cache_cat", "clone") or (name == "_to_copy" and (
                pas == "fwd" or outs[0].dtype == torch.float32))):
            row = "attn.core"  # SDPA's autocast casts (and their backward), the cache's copies, its grads' layout
        if row == "model" and name in ("_to_copy", "_log_softmax", "_log_softmax_backward_data",
                                       "nll_loss_backward"):
            row = "head.loss"  # the loss function's logits.float() and cross entropy
        if row == "residual":  # the layer's own code: its two residual adds (forward), their grads' casts
            seen = residuals[pas]
            residuals[pas] += 1
            row = ("attn.residual" if seen == 0 else "mlp.residual") if pas == "fwd" else \
                  ("mlp.residual" if seen == 0 else "attn.residual")
        if row == "model":
            continue
        tensors = ins + (outs if not name.endswith("_") else [])  # an in-place op returns its input
        if name == "nll_loss_backward":
            tensors = outs  # zeros over the logits, then one value scattered per token
        ext = extent_of(tensors)
        # the large tensors' bytes; a broadcast per-token or per-channel operand is negligible
        nbytes = sum(t.numel() * t.element_size() for t in tensors if t.numel() in EXTENT)
        kernels = 1
        if name == "slice_backward":  # zeros of the whole, then the slice copied in
            nbytes += outs[0].numel() * outs[0].element_size() // 2
            kernels = 2
        unit = UNITS.get(ext)
        key = (row, pas, ext)
        if ext == "weights":
            unit = ROW_WEIGHTS[row]
        table[key][0] += nbytes / unit if unit else 0
        table[key][1] += kernels
        print(f"# {pas} {row:16s} {name:24s} {ext:8s} {nbytes / unit if unit else 0:6.2f} B/elem")
    return table


def camel(row):
    """attn.qkv -> AttnQkv, mlp.gate_up -> MlpGateUp (models/op_names.hpp's constants)"""
    return "".join(part.capitalize() for part in row.replace(".", "_").split("_"))


if __name__ == "__main__":
    main()
