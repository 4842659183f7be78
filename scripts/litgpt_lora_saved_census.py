#!/usr/bin/env python3
"""What autograd keeps per Llama layer in LitGPT's LoRA fine-tuning, counted: the bf16 LoRA
and the bitsandbytes NF4 QLoRA runs of LitGPT's resource tables (tutorials/resource-tables.md,
"Lit-GPT version: commit 8641822", PyTorch 2.1, bitsandbytes 0.41.1).

Runs LitGPT's own model code of that commit (lit_gpt/model.py, lora.py, config.py) on the CPU
with finetune/lora.py's defaults of that commit: r 8, alpha 16, dropout 0.05, LoRA on the
query and value alone, no gradient checkpointing (single device), the model in bf16
(--precision bf16-true), the module in train mode. For NF4 every torch.nn.Linear is replaced,
as Lightning 2.1's BitsandbytesPrecision does (_convert_layers), by a stand-in for
bitsandbytes' Linear4bit whose autograd Function keeps exactly what bitsandbytes 0.41's
MatMul4Bit keeps: `ctx.tensors = (A, B)` when A or B needs a gradient, i.e. the input A (B is
the quantised weight itself, a parameter). bitsandbytes does not run 4-bit matmuls on the
CPU, so the stand-in multiplies by a bf16 weight; the kept tensors are the same.

Every tensor saved for the backward is caught by torch.autograd.graph.saved_tensors_hooks;
each storage is counted once and parameters' storages not at all. The count is taken for two
depths and differenced, so one layer's share is left (the embedding, RoPE cache, head and
loss cancel). Printed: bytes per token per hidden unit per layer, and per FFN-width element
where the shapes let them be told apart (two FFN widths).

Usage: python3 scripts/litgpt_lora_saved_census.py LIT_GPT_DIR
  LIT_GPT_DIR: a checkout of Lightning-AI/litgpt at 8641822 (the folder holding lit_gpt/);
  needs torch and lightning-utilities (lightning itself is stubbed: only utils.py imports it).
Not part of the test suite.
"""
import sys
import types

import torch
import torch.nn.functional as F


def import_lit_gpt(root):
    """lit_gpt's modules of that commit, without Lightning (stubbed: used for type hints)."""
    for name in ("lightning", "lightning.fabric", "lightning.fabric.strategies", "lightning.fabric.utilities",
                 "lightning.fabric.utilities.load"):
        stub = types.ModuleType(name)
        stub.__path__ = []
        stub.__getattr__ = lambda attr: type(attr, (), {})
        sys.modules[name] = stub
    package = types.ModuleType("lit_gpt")
    package.__path__ = [root + "/lit_gpt"]
    sys.modules["lit_gpt"] = package
    import lit_gpt.model  # noqa: F401  (first, as lit_gpt/__init__.py imports it)
    import lit_gpt.lora as lora

    return lora


class MatMul4BitStandIn(torch.autograd.Function):
    """bitsandbytes 0.41 MatMul4Bit's saving: A kept when A or B needs a gradient."""

    @staticmethod
    def forward(ctx, a, weight):
        ctx.keeps_a = a.requires_grad or weight.requires_grad
        if ctx.keeps_a:
            ctx.save_for_backward(a)  # bnb: ctx.tensors = (A, B); B is the parameter itself
        ctx.weight = weight
        return F.linear(a, weight)

    @staticmethod
    def backward(ctx, grad):
        return grad @ ctx.weight, None


class Linear4bitStandIn(torch.nn.Module):
    """bnb.nn.Linear4bit as LitGPT's QLoRA runs it: frozen weight, compute dtype bf16."""

    def __init__(self, linear):
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach(), requires_grad=False)
        self.in_features, self.out_features = linear.in_features, linear.out_features  # an nn.Linear's

    def forward(self, x):
        return MatMul4BitStandIn.apply(x, self.weight)


def to_nf4(module):
    """Lightning's _convert_layers: every torch.nn.Linear, LoRA's inner ones and the head too."""
    for name, child in module.named_children():
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, Linear4bitStandIn(child))
        else:
            to_nf4(child)


def saved_bytes(lora, n_layer, hidden, ffn, tokens, nf4):
    """Bytes of the distinct storages autograd keeps after one training forward."""
    torch.manual_seed(0)
    config = lora.Config.from_name("Llama-2-7b-hf", n_layer=n_layer, n_embd=hidden, n_head=hidden // 128,
                                   n_query_groups=hidden // 128, intermediate_size=ffn, padded_vocab_size=256,
                                   vocab_size=256, r=8, alpha=16, dropout=0.05, to_query=True, to_key=False,
                                   to_value=True, to_projection=False, to_mlp=False, to_head=False)
    model = lora.GPT(config).to(torch.bfloat16)
    lora.mark_only_lora_as_trainable(model)
    if nf4:
        to_nf4(model)
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    idx = torch.randint(0, 256, (1, tokens))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(idx)
    del logits
    return sum(kept.values())


def per_layer(lora, hidden, ffn, tokens, nf4):
    """One layer's saved bytes: the count at 3 layers less the count at 1, halved."""
    return (saved_bytes(lora, 3, hidden, ffn, tokens, nf4) - saved_bytes(lora, 1, hidden, ffn, tokens, nf4)) / 2


def main():
    lora = import_lit_gpt(sys.argv[1])
    hidden, tokens = 512, 128
    for nf4 in (False, True):
        label = "NF4 QLoRA (bnb Linear4bit)" if nf4 else "bf16 LoRA"
        a = per_layer(lora, hidden, 1024, tokens, nf4)
        b = per_layer(lora, hidden, 2048, tokens, nf4)
        print(f"{label}: {a:,.0f} bytes a layer at hidden 512, 4 heads, FFN 1024, r 8, {tokens} tokens")
        per_ffn = (b - a) / (tokens * 1024)
        per_hidden = (a - per_ffn * tokens * 1024) / (tokens * hidden)
        llama2 = per_hidden + per_ffn * 11008 / 4096
        print(f"{label}: {per_hidden:.4f} B per token-hidden + {per_ffn:.4f} B per token-FFN element a layer; "
              f"Llama 2 (FFN 11008/4096): {llama2:.4f} B per token per hidden unit per layer")


if __name__ == "__main__":
    main()
