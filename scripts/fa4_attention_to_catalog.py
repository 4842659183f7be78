#!/usr/bin/env python3
"""Fit the B200's attention_kernel_efficiency_by_seq.flash4 entry (FlashAttention-4, flash-attn 4
on Blackwell) from the only public B200 figures: S. Bekman's Llama-3.1-8B runs on one 8-GPU
B200 node (ml-engineering, insights/when-to-upgrade-gpus; ../shared/validation/microbench/
training_llama31_8b_*_h200_b200_mlengineering.csv). No FA4 kernel sweep is published.

The curve's shape by sequence is FlashAttention-3's (scripts/fa3_attention_to_catalog.py: the FA3
paper's H100 rates, 512 to 16k), as a fraction of the B200's own dense peak, times two factors
fitted with `twinsim simulate` on the scenarios in scenarios/validation/training/:
  level  so that FlashAttention-4 runs the 8K step's attention (mlengineering-llama31-8b-*-8k-
         zero2.yaml, the op list's fused kernels) 1.88x as fast as the H200's FlashAttention-3
         curves do: the source's own kernel benchmark (bench_flash_attn.py, FA4 on a B200 against
         FA3 on an H200, the 8B model's attention shape, causal, forward and backward: 1.88x at
         8k, 1.95x at 32k, the 32k ratio printed as a check);
  gain   one more point at 256k tokens, the 16k point times it, so that the 256K step of the
         long-context sweep takes its published time (mlengineering-llama31-8b-b200-long-
         context.yaml: 852 TFLOP/s). The kernel keeps speeding up past 16k on long sequences:
         the H100's cuDNN rows measured in this repo do too, a few percent
         (measured_2026-11-26/h100/attention_long.csv).
The 8K step's in-step attention share (834 and 771 TFLOP/s, the source's buckets: the wall-clock
step split by the flash kernels' share of the non-NCCL kernel time, bench_decompose.py) and the
long-context sweep's 8K to 192K steps are held out, judged by tests/unit/validation/
published_runs_test.cpp.
Each factor is found by bisection over `--set cluster.gpu.attention_kernel_efficiency_by_seq.flash4`.

    scripts/fa4_attention_to_catalog.py build/app/twinsim
"""
import argparse

from fa3_attention_to_catalog import (bisect, curve_yaml, flash3_curves, flow, model_flops, simulate_time,
                                      with_long_point)

H100_PEAK, B200_PEAK = 989.0, 2250.0  # dense bf16 TFLOP/s (hardware/catalog/gpus/*.yaml)
# FA4 on a B200 against FA3 on an H200, fwd+bwd, causal, the 8B model's attention shape
# (ml-engineering insights/when-to-upgrade-gpus, bench_flash_attn.py, as its README prints it)
KERNEL_RATIO_8K, KERNEL_RATIO_32K = 1.88, 1.95


def curves(level, gain):
    """FlashAttention-3's curves as fractions of the B200's peak times `level`, with the 256k point."""
    scale = level * H100_PEAK / B200_PEAK
    scaled = {d: ([(s, e * scale) for s, e in f], [(s, e * scale) for s, e in b])
              for d, (f, b) in flash3_curves(H100_PEAK).items()}
    return with_long_point(scaled, gain)


def simulate(exe, scenario, level, gain, *sets):
    """`scenario` on the B200 with the flash4 curves of `level` and `gain`."""
    return simulate_time(exe, scenario, "cluster.gpu=b200",
                         "cluster.gpu.attention_kernel_efficiency_by_seq.flash4=" + flow(curves(level, gain)), *sets)


def h200_attention_s(exe, seq):
    """The H200's FlashAttention-3 time for the 8K step's attention rows at `seq` tokens."""
    return simulate_time(exe, "mlengineering-llama31-8b-h200-8k-zero2.yaml", "stack.layer_kernels=fused",
                         f"training.seq_len={seq}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("twinsim")
    args = ap.parse_args()

    def attention_s(t):
        return sum(op["time_s"] * op["count"] for op in t["ops"] if op["name"].startswith("attn.core."))

    # the attention rows priced with the op list's own kernels (fused), without the copies HF's
    # code runs around them: the kernels the benchmark timed
    def b200_attention_s(level, gain, seq):
        return attention_s(simulate(args.twinsim, "mlengineering-llama31-8b-b200-8k-zero2.yaml", level, gain,
                                    "stack.layer_kernels=fused", f"training.seq_len={seq}"))

    want_8k = attention_s(h200_attention_s(args.twinsim, 8192)) / KERNEL_RATIO_8K
    level = bisect(lambda x: want_8k - b200_attention_s(x, 0, 8192), 0.5, 4)
    want_256k = model_flops(262144) / 852e12
    gain = bisect(lambda g: want_256k - simulate(args.twinsim, "mlengineering-llama31-8b-b200-long-context.yaml", level, g,
                                                  "training.seq_len=262144")["step_s"], 0.8, 2)
    ratio_32k = attention_s(h200_attention_s(args.twinsim, 32768)) / b200_attention_s(level, gain, 32768)
    print(f"# level {level:.4f} (8K attention {want_8k:.4f} s), gain {gain:.4f} (256K step {want_256k:.2f} s); "
          f"FA4 / FA3 at 32k {ratio_32k:.3f} (benchmark {KERNEL_RATIO_32K})")
    print("attention_kernel_efficiency_by_seq:\n  flash4:")
    for d, (f, b) in curves(level, gain).items():
        print(f"    {d}: {{fwd: {curve_yaml(f)}, bwd: {curve_yaml(b)}}}")


if __name__ == "__main__":
    main()
