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

// The logits one rank's loss runs over for a micro-batch: its tokens (a 1/cp share of the
// sequence) x its vocabulary shard (1/tp), as head.loss counts them.
std::int64_t rank_logits(const ModelSpec& m, const Plan& p, const MicroBatchShape& mb);

}  // namespace twinsim
