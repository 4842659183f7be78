#include "models/megatron_softmax.hpp"

namespace twinsim {

namespace {

bool is_16_bit(Dtype d) { return d == Dtype::fp16 || d == Dtype::bf16; }

// scaled_masked_softmax.h get_batch_per_block (Megatron-DeepSpeed 2255b61): warps of
// min(next_pow2(sk), 32) threads in a 128-thread block, two rows a warp up to 128 keys.
std::int64_t batch_per_block(std::int64_t keys) {
  std::int64_t pow2 = 1;
  while (pow2 < keys) pow2 *= 2;
  const std::int64_t warp = pow2 < 32 ? pow2 : 32;
  return (128 / warp) * (pow2 <= 128 ? 2 : 1);
}

}  // namespace

bool fused_softmax_runs(std::string_view rule, const SoftmaxShape& s) {
  if (rule == kKernelSoftmax) return true;
  const std::int64_t attn_batches = s.batch * s.heads;
  const bool common = is_16_bit(s.dtype) && s.keys > 16 && s.queries % 4 == 0 && attn_batches % 4 == 0;
  if (rule == kMegatron2021Softmax) return common && s.keys <= 2048;
  // megatron_2023: the causal kernel (ScaledUpperTriangMaskedSoftmax) also splits the batches by block
  return common && s.keys <= 4096 && s.keys % 4 == 0 && attn_batches % batch_per_block(s.keys) == 0;
}

}  // namespace twinsim
