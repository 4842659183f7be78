#pragma once
// The ops outside the transformer layers, in the same LayerOp form: the embedding at the
// start of the first pipeline stage, and the final norm, logits and loss at the end of
// the last. Megatron splits the vocabulary over TP ranks (vocab-parallel embedding and
// cross-entropy, Shoeybi et al. 2019 §3).
#include <vector>

#include "models/layer_ops.hpp"

namespace twinsim {

std::vector<LayerOp> build_embedding_ops(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);
std::vector<LayerOp> build_head_ops(const ModelSpec& model, const Plan& plan, const MicroBatchShape& shape);

}  // namespace twinsim
