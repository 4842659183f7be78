#!/usr/bin/env python3
"""One GPU, one real training step, measured: a Llama-architecture model built from its
config (Hugging Face transformers' LlamaForCausalLM, random weights, no download) trained
in PyTorch's standard mixed precision (fp32 parameters, bf16 autocast, SDPA attention,
fused AdamW), to set beside twinsim's prediction of the same step.

Writes OUTDIR/train_step.csv: model, micro-batch, sequence, parameters, median seconds of
forward, backward, optimizer step and the whole step (CUDA events, 3 warm-up steps, 10
timed), and the peak of torch.cuda.max_memory_allocated over the timed steps.
With --profile, also OUTDIR/train_step_kernels.csv: every CUDA kernel of two steps of the
first case under torch.profiler (name, calls, device microseconds), to say where a step's
time goes (GEMMs, attention, element-wise kernels, the optimizer, idle time).
Usage: python3 scripts/gpu_train_step.py OUTDIR [--profile]
"""
import csv
import os
import statistics
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from gpu_microbench import profiled_kernels  # scripts/: torch.profiler's kernels, summed by name

# Llama 3.2 1B's config.json (meta-llama/Llama-3.2-1B): tied embeddings, rope_theta 5e5
LLAMA32_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                  num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
                  rope_theta=500000.0, tie_word_embeddings=True, rms_norm_eps=1e-5)
# Llama 3 8B's shapes with 8 of its 32 layers (fits one GPU with Adam in fp32)
LLAMA3_8B_8L = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=8, num_attention_heads=32,
                    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
                    rope_theta=500000.0, tie_word_embeddings=False, rms_norm_eps=1e-5)
CASES = [("llama3.2-1b", LLAMA32_1B, 4, 2048), ("llama3.2-1b", LLAMA32_1B, 8, 2048),
         ("llama3-8b-8layers", LLAMA3_8B_8L, 2, 4096)]


def timed(fn):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    out = fn()
    b.record()
    return out, (a, b)


def run_case(name, cfg, batch, seq):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa")).cuda()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda")
    times = {"fwd": [], "bwd": [], "opt": [], "step": []}
    torch.cuda.reset_peak_memory_stats()
    for i in range(13):
        s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s0.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, ev_f = timed(lambda: model(input_ids=ids, labels=ids).loss)
        _, ev_b = timed(lambda: loss.backward())
        _, ev_o = timed(lambda: (opt.step(), opt.zero_grad(set_to_none=True)))
        s1.record()
        torch.cuda.synchronize()
        if i >= 3:
            for key, (a, b) in (("fwd", ev_f), ("bwd", ev_b), ("opt", ev_o), ("step", (s0, s1))):
                times[key].append(a.elapsed_time(b) / 1e3)
    row = dict(model=name, micro_batch=batch, seq=seq, params=params,
               **{k + "_s": statistics.median(v) for k, v in times.items()},
               peak_bytes=torch.cuda.max_memory_allocated(), loss=float(loss))
    del model, opt, ids, loss
    torch.cuda.empty_cache()
    return row


def profile_case(out, name, cfg, batch, seq):
    """Kernels of two steps after three warm-up steps, from torch.profiler's CUDA activity."""
    model = LlamaForCausalLM(LlamaConfig(**cfg, attn_implementation="sdpa")).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def two_steps():
        a.record()
        step()
        step()
        b.record()
        torch.cuda.synchronize()
    kernels = profiled_kernels(two_steps)
    path = os.path.join(out, f"train_step_kernels_{name}.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "two_steps_us", "kernel", "calls", "device_us"])
        for kname, (calls, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1]):
            w.writerow([f"{name} b{batch} s{seq}", round(a.elapsed_time(b) * 1e3, 1), kname, calls, round(us, 1)])
    print(f"wrote {path}: {len(kernels)} kernels, busy {sum(v[1] for v in kernels.values()) / 1e3:.1f} ms "
          f"of {a.elapsed_time(b):.1f} ms", flush=True)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--profile" in sys.argv[2:]:
        profile_case(out, *CASES[0])
        torch.cuda.empty_cache()
    path = os.path.join(out, "train_step.csv")
    with open(path, "w", newline="") as f:
        w = None
        for case in CASES:
            try:
                row = run_case(*case)
            except Exception as e:  # one case's failure keeps the others
                print(f"{case[0]} b{case[2]} s{case[3]}: {type(e).__name__}: {e}".splitlines()[0], flush=True)
                continue
            print(row, flush=True)
            if w is None:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
            w.writerow(row)
            f.flush()


if __name__ == "__main__":
    main()
