#pragma once
// The communication at the edges of a tensor-parallel region (Shoeybi et al. 2019,
// Fig. 3: f is identity forward / all-reduce backward, g is all-reduce forward /
// identity backward; with sequence parallelism, Korthikanti et al. 2022 §4.2.2, Fig. 5:
// g becomes all-gather forward / reduce-scatter backward and g-bar the reverse).
// Activations are [tokens, hidden] row-major; SP shards the token rows in TP-rank order.
#include <cstddef>

#include "exec/model/tensor.hpp"
#include "exec/model/model_context.hpp"

namespace twinsim::exec {

// [tokens/tp, width] on each rank -> [tokens, width] everywhere (all-gather).
Tensor gather_token_rows(const ModelContext& ctx, const float* local, std::size_t local_count,
                         MemCategory category);
// Partial sums [tokens, width] -> this rank's reduced rows [tokens/tp, width] (reduce-scatter).
Tensor reduce_scatter_token_rows(const ModelContext& ctx, const float* full, std::size_t full_count,
                                 MemCategory category);
// Partial sums summed in place over the TP group (all-reduce).
void all_reduce_tp(const ModelContext& ctx, float* data, std::size_t count);

}  // namespace twinsim::exec
