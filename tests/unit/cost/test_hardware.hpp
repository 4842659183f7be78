#pragma once
// Datasheet hardware for the cost-model tests, built directly (not from the catalog).
#include "hardware/cluster_spec.hpp"

namespace twinsim::test {

// NVIDIA A100 SXM4 80GB datasheet: 312 TFLOP/s dense bf16/fp16, 19.5 fp32 (CUDA cores),
// 2039 GB/s HBM2e, NVLink 600 GB/s both directions = 300 one way; 108 SMs (A100
// architecture whitepaper, Table 1).
inline GpuSpec a100() {
  GpuSpec g;
  g.name = "a100-sxm-80gb";
  g.memory_bytes = 80LL << 30;
  g.hbm_bandwidth_Bps = 2039e9;
  g.peak_flops = {{Dtype::bf16, 312e12}, {Dtype::fp16, 312e12}, {Dtype::fp32, 19.5e12}};
  g.nvlink_bandwidth_Bps = 300e9;
  g.kernel_launch_s = 4e-6;     // as the catalog's estimate
  g.memory_efficiency = 0.85;   // as the catalog's default
  g.sms = 108;
  // maximum achievable bf16 matmul 267.9 of 312 TFLOP/s (S. Bekman, ml-engineering, MAMF
  // table), flat: the hand-derived values below need one figure, not the catalog's curve
  g.gemm_efficiency = {{1.0, 0.859}};
  // FlashAttention-2 reaches 50-73% of A100 peak, forward the faster (Dao 2023, abstract)
  g.attention_efficiency = {{{1.0, 0.73}}, {{1.0, 0.50}}};
  return g;
}

// NVIDIA DGX A100: 8x A100 on NVSwitch, 8x ConnectX-6 HDR 200 Gb/s = 25 GB/s each.
// Step latencies as the catalog node (inside NCCL's hwLat ranges, tuning.cc).
inline ClusterSpec dgx_a100(int nodes) {
  ClusterSpec c;
  c.name = "dgx-a100-80gb";
  c.gpu = a100();
  c.gpus_per_node = 8;
  c.nodes = nodes;
  c.intra_node = {300e9, 3e-6, {}, {}, {}};
  c.inter_node = {25e9, 5e-6, {}, {}, {}};
  c.nics_per_node = 8;
  return c;
}

}  // namespace twinsim::test
