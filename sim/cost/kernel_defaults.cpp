#include "sim/cost/kernel_defaults.hpp"

namespace twinsim {

namespace {

// A100 SXM: 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1).
// The catalog's A100 entries carry a measured GEMM curve of their own (a100-sxm-80gb.yaml);
// this flat figure serves an A100 described inline without one.
// GEMM: maximum achievable bf16 matmul 267.9 of 312 TFLOP/s = 85.9% (S. Bekman,
// ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS
// comparison table", CUDA 12.1). Flat in FLOPs: small GEMMs lose through wave
// quantization and launch overhead, which compute_cost.cpp models from the shape.
// Attention: FlashAttention-2 reaches 50-73% of A100 peak (Dao 2023, arXiv 2307.08691,
// abstract); the forward pass is the faster one (ibid. §4.1), so fwd 0.73, bwd 0.50.
const KernelDefaults kA100{108, {{1.0, 0.859}}, 0.73, 0.50};

// H100 SXM: 132 SMs (NVIDIA H100 Tensor Core GPU datasheet / Hopper whitepaper).
// GEMM: 792.1 of 989 TFLOP/s = 80.1% (ml-engineering table above).
// Attention: FlashAttention-3 reaches 740 TFLOP/s fp16 = 75% of peak forward (Shah et al.
// 2024, arXiv 2407.08608, abstract); backward assumed at FA2's bwd/fwd ratio (0.50/0.73).
const KernelDefaults kH100{132, {{1.0, 0.801}}, 0.75, 0.51};

// H200 SXM: the H100 die (132 SMs) with HBM3e. GEMM: GH200 (same die, HBM3e) 821.0 of
// 989 TFLOP/s = 83.0% (ml-engineering table above). Attention as H100.
const KernelDefaults kH200{132, {{1.0, 0.830}}, 0.75, 0.51};

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

const KernelDefaults* kernel_defaults(std::string_view gpu_name) {
  if (starts_with(gpu_name, "a100")) return &kA100;
  if (starts_with(gpu_name, "h100")) return &kH100;
  if (starts_with(gpu_name, "h200")) return &kH200;
  return nullptr;
}

}  // namespace twinsim
