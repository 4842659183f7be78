#pragma once
// One decode token a sequence over its KV cache as one attention call, as the serving pass
// prices it (sim/inference/iteration_cost.cpp ServingCostModel::compute_op): the op the
// decode-kernel judges (decode_cuda_core_test, decode_fa3_paged_test) price their rows with.
#include <cstdint>

#include "models/layer_ops.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim::test {

inline ComputeOp decode_attention_op(int batch, int seqlen, int qo_heads, int kv_heads, int head_dim) {
  ComputeOp op;
  op.kind = ComputeKind::attention;
  op.kernel = kKvCacheAttentionKernel;
  op.dtype = Dtype::bf16;
  op.head_dim = head_dim;
  op.flops = 4.0 * batch * seqlen * qo_heads * head_dim;  // QK^T and PV, 2 FLOPs a multiply-add
  op.bytes = 4.0 * batch * seqlen * kv_heads * head_dim;  // K and V in 16 bits
  op.kv_items = static_cast<std::int64_t>(batch) * kv_heads;
  return op;
}

}  // namespace twinsim::test
