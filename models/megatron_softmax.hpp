#pragma once
// Megatron's FusedScaleMaskSoftmax (the unfused attention core's scale, mask and softmax):
// it runs its CUDA kernel only where its is_kernel_available rule holds, else PyTorch's ops
// in fp32 (forward_torch_softmax). The rule, by release (read at the commit):
//  * "megatron_2023": microsoft/Megatron-DeepSpeed 2255b61 (vTrain's runs; vTrain's replica
//    src/model/fused_softmax.py has the same rule), megatron/model/fused_softmax.py: fusion on,
//    fp16 or bf16 input, 16 < sk <= 4096, sq % 4 == 0, sk % 4 == 0, b*np % 4 == 0, and for the
//    causal mask b*np % batch_per_block == 0 (fused_kernels/scaled_masked_softmax.h
//    get_batch_per_block: (128 / min(next_pow2(sk), 32)) x (2 if next_pow2(sk) <= 128 else 1));
//  * "megatron_2021": NVIDIA/Megatron-LM 6985e58 (the SC'21 scripts' release, 2021-08),
//    megatron/model/fused_softmax.py forward: fp16 or bf16 input, a mask, 16 < sk <= 2048,
//    sq % 4 == 0, b*np % 4 == 0;
//  * "kernel": the op list's fused softmax at every shape (no such rule: a fused attention
//    kernel, or a stack whose softmax is not Megatron's).
#include <array>
#include <cstdint>
#include <string_view>

#include "models/dtype.hpp"

namespace twinsim {

inline constexpr std::string_view kKernelSoftmax = "kernel";
inline constexpr std::string_view kMegatron2021Softmax = "megatron_2021";
inline constexpr std::string_view kMegatron2023Softmax = "megatron_2023";
inline constexpr std::array<std::string_view, 3> kSoftmaxRules = {kKernelSoftmax, kMegatron2021Softmax,
                                                                  kMegatron2023Softmax};

// The attention scores one GPU's softmax sees: [b, np, sq, sk] in `dtype`, a causal mask.
struct SoftmaxShape {
  Dtype dtype = Dtype::fp16;
  std::int64_t batch = 1;    // b: the micro-batch's sequences
  std::int64_t heads = 1;    // np: attention heads on this GPU
  std::int64_t queries = 0;  // sq
  std::int64_t keys = 0;     // sk
};

// Whether the stack's softmax (`rule`, one of kSoftmaxRules) runs as its fused CUDA kernel.
bool fused_softmax_runs(std::string_view rule, const SoftmaxShape& shape);

// The fallback's kernels beyond the fused kernel's one, a pass, and the bytes they move beyond
// its (per score element; the fused kernel reads and writes 2 + 2 bytes forward, reads the
// gradient and the output and writes 2 + 2 + 2 backward, as the op list counts it). Forward:
// input.float() (2 + 4), * scale (4 + 4), masked_fill_ in place (4 + 4), Softmax (4 + 4),
// .half() (4 + 2) = 36 bytes in 5 kernels; backward, autograd's nodes of those five: the
// cast's (2 + 4), softmax's (4 + 4 + 4), masked_fill's (4 + 4), mul's (4 + 4), the cast's
// (4 + 2) = 40 bytes in 5. Each kernel is one dispatched call on the host.
struct SoftmaxFallback {
  int fwd_kernels = 4, bwd_kernels = 4;
  double fwd_bytes_per_score = 36 - 4, bwd_bytes_per_score = 40 - 6;
};

}  // namespace twinsim
