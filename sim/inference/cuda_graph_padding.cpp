#include "sim/inference/cuda_graph_padding.hpp"

#include <algorithm>

namespace twinsim {

namespace {

// `to - sequences` dummy generation requests, each one new token over nothing cached
// (kv_cache_manager.add_dummy_requests(is_gen=True): one token of context).
void add_dummies(IterationShape& shape, std::int64_t to) {
  for (std::int64_t s = shape.sequences; s < to; ++s) shape.add_chunk(0, 1, true);
}

}  // namespace

std::vector<std::int64_t> captured_graph_batches(std::vector<std::int64_t> sizes, std::int64_t max_batch_size,
                                                 std::int64_t max_num_tokens) {
  const std::int64_t bound = std::min(max_batch_size, max_num_tokens);  // no draft tokens
  std::ranges::sort(sizes);
  std::vector<std::int64_t> out;
  for (std::int64_t s : sizes)
    if (s >= 1 && s <= bound && (out.empty() || out.back() != s)) out.push_back(s);
  if (!sizes.empty() && sizes.back() > bound && (out.empty() || out.back() != bound)) out.push_back(bound);
  return out;
}

std::int64_t graph_batch_for(const std::vector<std::int64_t>& captured, std::int64_t batch) {
  const auto it = std::ranges::lower_bound(captured, batch);
  return it == captured.end() ? 0 : *it;
}

bool generation_only(const IterationShape& shape) { return shape.tokens == shape.sequences; }

void pad_to_graph_batch(IterationShape& shape, const std::vector<std::int64_t>& captured) {
  if (shape.tokens == 0 || !generation_only(shape)) return;
  add_dummies(shape, graph_batch_for(captured, shape.sequences));
}

void pad_lockstep_to_graph_batch(std::vector<IterationShape>& ranks, const std::vector<std::int64_t>& captured) {
  std::int64_t largest = 0;
  for (const IterationShape& r : ranks) {
    if (!generation_only(r)) return;  // a prompt chunk on any rank: every rank runs eagerly, unpadded
    largest = std::max(largest, r.sequences);
  }
  const std::int64_t to = graph_batch_for(captured, std::max<std::int64_t>(1, largest));
  for (IterationShape& r : ranks) add_dummies(r, to);
}

}  // namespace twinsim
