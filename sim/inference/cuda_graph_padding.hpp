#pragma once

#include <cstdint>
#include <vector>

#include "sim/inference/iteration_ops.hpp"

namespace twinsim {

// CUDA-graph padding of generation-only passes, as TensorRT-LLM's PyTorch backend runs it
// (tensorrt_llm/_torch/pyexecutor/model_engine.py, PyTorchModelEngine: _filter_cuda_graph_batch_sizes
// and _get_padded_batch; the same rule in later releases' cuda_graph_runner.py). A pass with no
// prompt chunk replays the graph captured for the smallest batch size at or above its own, the
// missing sequences filled with one dummy generation request (a single cached token); under
// attention DP the ranks first agree on the largest rank's batch, and only when every rank is
// generation-only. Off (no sizes) unless serve's --cuda-graph-batch-sizes names them.

// The batch sizes an engine captures from the `sizes` it is given: those up to
// min(max_batch_size, max_num_tokens) (the largest pure-decode batch), and that bound itself
// when a larger size was asked for ("padding to max_cuda_graph_bs is acceptable"). Sorted.
std::vector<std::int64_t> captured_graph_batches(std::vector<std::int64_t> sizes, std::int64_t max_batch_size,
                                                 std::int64_t max_num_tokens);

// The captured batch a generation-only pass of `batch` sequences replays: the smallest captured
// size >= batch; 0 when none (beyond the largest captured size, the pass runs unpadded).
std::int64_t graph_batch_for(const std::vector<std::int64_t>& captured, std::int64_t batch);

// A pass that computes one token a sequence (no prompt chunk).
bool generation_only(const IterationShape& shape);

// One engine's pass padded to its captured batch (unchanged when it carries a prompt chunk).
void pad_to_graph_batch(IterationShape& shape, const std::vector<std::int64_t>& captured);

// An attention-DP group's passes: when every rank is generation-only, each (an idle rank too:
// attention DP gives it a dummy request) padded to the captured batch of the largest rank's.
void pad_lockstep_to_graph_batch(std::vector<IterationShape>& ranks, const std::vector<std::int64_t>& captured);

}  // namespace twinsim
