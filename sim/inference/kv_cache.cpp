#include "sim/inference/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/checked_math.hpp"
#include "sim/inference/trtllm_kv_pool.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

namespace {

// One GPU's pool of `stage` as vLLM (a share of HBM less the weights, the buffers and a
// profiled pass's activations) or SGLang (a static fraction less the weights) sizes it.
StageKvCapacity profiled_stage_kv(const Scenario& s, const KvCacheConfig& config, int stage) {
  const InferenceWorkload& w = *s.inference;
  // vLLM sizes the cache after a profiling pass of max_num_batched_tokens tokens
  // (Worker.determine_num_available_blocks): one prompt of that length is our stand-in.
  InferenceWorkload profile = w;
  profile.batch = 1;
  profile.prompt_len = config.max_batched_tokens;
  StageKvCapacity st;
  st.stage = stage;
  const bool fixed = config.static_fraction > 0;  // SGLang's: no profiled pass set aside
  const double share = fixed ? config.static_fraction : config.memory_utilization;
  st.usable_bytes = static_cast<std::int64_t>(static_cast<double>(s.cluster.gpu.memory_bytes) * share);
  st.weight_bytes = inference_gpu_weight_bytes(s.model, s.plan, w, stage) + draft_weight_bytes(s.plan, w);
  st.buffer_bytes = fixed ? 0 : inference_buffers(s.model, s.plan, profile).total();
  st.activation_bytes = fixed ? 0 : prefill_activation_bytes(s.model, s.plan, profile, stage);
  st.kv_bytes = std::max<std::int64_t>(0, st.usable_bytes - st.weight_bytes - st.buffer_bytes - st.activation_bytes);
  return st;
}

}  // namespace

KvCapacity kv_capacity(const Scenario& s, const KvCacheConfig& config) {
  const InferenceWorkload& w = *s.inference;
  KvCapacity cap;
  cap.block_tokens = config.block_tokens;
  cap.blocks = std::numeric_limits<std::int64_t>::max();
  for (int stage = 0; stage < s.plan.pp; ++stage) {
    StageKvCapacity st =
        config.free_fraction > 0 ? trtllm_stage_kv(s, config, stage) : profiled_stage_kv(s, config, stage);
    st.bytes_per_token = kv_cache_bytes_per_token(s.model, stage_layers(s.model, s.plan, stage).total(), s.plan.tp,
                                                  w.kv_dtype) +
                         draft_kv_bytes_per_token(s.plan, w);  // a draft's cache grows token for token with it
    const std::int64_t block_bytes = checked_mul(st.bytes_per_token, config.block_tokens);
    st.blocks = block_bytes > 0 ? st.kv_bytes / block_bytes : 0;
    if (st.blocks < cap.blocks) {
      cap.blocks = st.blocks;
      cap.limiting_stage = stage;
    }
    cap.stages.push_back(st);
  }
  return cap;
}

KvCacheConfig engine_kv_config(const Scenario& scenario, KvCacheConfig config) {
  config.static_fraction = scenario.stack.serving_static_fraction(scenario.plan.tp);
  config.free_fraction = scenario.stack.serving_kv_free_fraction;
  if (config.graph_sequences == 0) config.graph_sequences = scenario.stack.serving_max_sequences;
  return config;
}

std::int64_t windowed_blocks_for_tokens(std::int64_t tokens, std::int64_t block_tokens, std::int64_t window,
                                        double windowed_share) {
  if (window <= 0 || windowed_share <= 0 || tokens <= window) return blocks_for_tokens(tokens, block_tokens);
  const double kept = (1 - windowed_share) * static_cast<double>(tokens) + windowed_share * static_cast<double>(window);
  return static_cast<std::int64_t>(std::ceil(kept / static_cast<double>(block_tokens) - 1e-9));
}

double freed_window_share(const ModelSpec& model, const StackSpec& stack) {
  return stack.serving_keeps_window_kv ? 0.0 : model.windowed_share();
}

std::int64_t max_batch(const KvCapacity& capacity, std::int64_t sequence_tokens, const ModelSpec& model,
                       const StackSpec& stack) {
  return capacity.blocks / windowed_blocks_for_tokens(sequence_tokens, capacity.block_tokens, model.sliding_window,
                                                      freed_window_share(model, stack));
}

}  // namespace twinsim
