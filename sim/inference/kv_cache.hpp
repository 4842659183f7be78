#pragma once
// The paged KV cache of a serving replica (Kwon et al. 2023, "Efficient Memory
// Management for Large Language Model Serving with PagedAttention", §4.2-4.3): the
// cache is cut into blocks of a fixed number of tokens; a sequence holds
// ceil(tokens / block) blocks, so only its last block is partly empty (internal
// fragmentation). How many blocks a GPU holds follows from what is left of its memory
// after the weights, the workspace and the activations of the largest pass.
#include <cstdint>
#include <vector>

#include "scenario/scenario.hpp"

namespace twinsim {

// vLLM's default --block-size (vllm/config.py, CacheConfig: block_size 16 on CUDA).
constexpr std::int64_t kDefaultBlockTokens = 16;
// vLLM's default --gpu-memory-utilization: the share of HBM the engine may use.
constexpr double kDefaultMemoryUtilization = 0.9;
// vLLM's default --max-num-seqs: sequences in one iteration at most.
constexpr std::int64_t kDefaultMaxSequences = 256;
// Tokens one iteration may compute (vLLM --max-num-batched-tokens with chunked
// prefill; 2048 in vLLM 0.6's SchedulerConfig). Also sizes the activation reserve.
constexpr std::int64_t kDefaultMaxBatchedTokens = 2048;

struct KvCacheConfig {
  std::int64_t block_tokens = kDefaultBlockTokens;
  double memory_utilization = kDefaultMemoryUtilization;
  std::int64_t max_batched_tokens = kDefaultMaxBatchedTokens;
  // SGLang's mem_fraction_static (StackSpec::serving_static_fraction), 0: vLLM's profiling.
  // Its pool is rest = available after the weights - total x (1 - fraction)
  // (ModelRunner.profile_max_num_token): fraction x HBM less the weights, nothing set aside
  // for the buffers and activations, which live in the rest.
  double static_fraction = 0;
  // TensorRT-LLM's free_gpu_memory_fraction (StackSpec::serving_kv_free_fraction), 0: not its
  // sizing. Its pool is that fraction of what a profiled pass leaves (trtllm_kv_pool.hpp).
  double free_fraction = 0;
  // The engine's max_batch_size, the largest batch its CUDA graphs may capture (0: no graphs).
  std::int64_t graph_sequences = 0;
};

// The pool's sizing as the scenario's engine does it: its stack's static fraction at the
// plan's TP size, or its free-memory fraction (graph_sequences: the stack's max sequences
// unless `config` sets them), with `config`'s other settings.
KvCacheConfig engine_kv_config(const Scenario& scenario, KvCacheConfig config = {});

// Tokens per block of the engine's cache: its stack's serving_kv_block_tokens, else vLLM's 16.
inline std::int64_t engine_block_tokens(const StackSpec& stack) {
  return stack.serving_kv_block_tokens > 0 ? stack.serving_kv_block_tokens : kDefaultBlockTokens;
}

inline std::int64_t blocks_for_tokens(std::int64_t tokens, std::int64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

// Blocks (of every layer's K,V for block_tokens tokens) a sequence of `tokens` tokens holds
// when a share `windowed_share` of its KV bytes lies in windowed layers that keep only the
// last `window` tokens (vLLM's hybrid KV cache manager frees their older blocks):
// (1 - share) tokens + share min(tokens, window), in blocks.
std::int64_t windowed_blocks_for_tokens(std::int64_t tokens, std::int64_t block_tokens, std::int64_t window,
                                        double windowed_share);

// Slots a sequence of `tokens` holds but does not fill: the rest of its last block.
inline std::int64_t unused_slots(std::int64_t tokens, std::int64_t block_tokens) {
  return blocks_for_tokens(tokens, block_tokens) * block_tokens - tokens;
}

// Per GPU of each pipeline stage.
struct StageKvCapacity {
  int stage = 0;
  // TensorRT-LLM's sizing (free_fraction): usable is the whole HBM, buffers also the CUDA
  // context and the CUDA graphs' pool, kv = free_fraction x what the others leave.
  std::int64_t usable_bytes = 0;     // HBM x memory_utilization
  std::int64_t weight_bytes = 0;
  std::int64_t buffer_bytes = 0;     // workspace and communication buffers
  std::int64_t activation_bytes = 0; // working set of a pass of max_batched_tokens
  std::int64_t kv_bytes = 0;         // what is left for the cache (0 if nothing)
  std::int64_t bytes_per_token = 0;  // this stage's layers, this GPU's KV heads
  std::int64_t blocks = 0;
};

struct KvCapacity {
  std::int64_t block_tokens = kDefaultBlockTokens;
  std::int64_t blocks = 0;            // per replica: the stage with the fewest blocks decides
  int limiting_stage = 0;
  std::vector<StageKvCapacity> stages;
  std::int64_t tokens() const { return blocks * block_tokens; }
};

KvCapacity kv_capacity(const Scenario& scenario, const KvCacheConfig& config = {});

// The share of a token's KV bytes the paged cache frees once out of the window: the model's
// windowed layers' (ModelSpec::windowed_share), or none where the engine keeps them
// (StackSpec::serving_keeps_window_kv).
double freed_window_share(const ModelSpec& model, const StackSpec& stack);

// Sequences of prompt_len + output_len tokens that fit at once: blocks / blocks per sequence
// (a windowed model's by windowed_blocks_for_tokens, as its engine frees the window).
std::int64_t max_batch(const KvCapacity& capacity, std::int64_t sequence_tokens, const ModelSpec& model,
                       const StackSpec& stack);

}  // namespace twinsim
