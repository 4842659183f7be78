#pragma once
// The ops of one serving iteration on one GPU. Training's layer_ops assume every
// sequence of a micro-batch has the same length and all its tokens are new; a serving
// iteration (vLLM's continuous batching) mixes prefill chunks of different prompts with
// decode steps of one token each, and every sequence's queries attend to its own cached
// keys. So the iteration is described by sums over its sequences (IterationShape) and
// its ops are built here, in the same LayerOp form and with the same op names as
// models/layer_ops, and priced by the same cost model (sim/cost).
//
// Conventions: one forward pass, nothing saved for a backward; attention is causal
// (FlashAttention skips the masked half of the score blocks, Dao 2023, FlashAttention-2
// §3.1.1); linear-layer weights are in the scenario's weight_dtype (sim/inference/
// quantization), the K,V cache in kv_dtype; norms, embeddings and the logits layer stay
// 16-bit (GPTQ/AWQ quantize the transformer blocks' linear layers only).
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/layer_ops.hpp"
#include "models/workload.hpp"

namespace twinsim {

struct IterationShape {
  std::int64_t tokens = 0;          // new tokens whose K,V this pass computes
  std::int64_t sequences = 0;       // sequences in the pass
  std::int64_t sampled = 0;         // sequences that sample a token (rows of the logits)
  double attention_pairs = 0;       // (query, key) pairs, full rectangle (no causal halving), summed over sequences
  std::int64_t kv_read_tokens = 0;  // cached + new tokens whose K,V the attention reads
  // of attention_pairs, a prompt chunk's queries over the keys cached before it (cached x
  // chunk; decode steps' rows not counted): what an engine may run as a second kernel over
  // the paged cache (StackSpec::serving_prefix_attention_fa2)
  double prefix_pairs = 0;
  // of attention_pairs, a prompt chunk's queries over its own keys (chunk x chunk, the square
  // whose upper half the causal mask skips), and the chunks' tokens (decode rows not counted):
  // a causal kernel's rate there is read at square_pairs / square_rows keys
  double square_pairs = 0;
  std::int64_t square_rows = 0;
  // The same two counts in a sliding-window layer (ModelSpec::sliding_window): `window`
  // set before add_chunk (0: the model has none); pairs again as the full rectangle of
  // the same cost, scaled by the window's share of the causal pairs.
  std::int64_t window = 0;
  double window_pairs = 0;
  std::int64_t window_kv_read_tokens = 0;

  // A prefill chunk of `chunk` tokens after `cached` tokens already in the cache; it
  // samples a token when it completes the prompt. A decode step is add_chunk(ctx - 1, 1, true).
  void add_chunk(std::int64_t cached, std::int64_t chunk, bool samples);
  // The same sequences `times` times over (a batch of alike sequences).
  void repeat(std::int64_t times);
};

// A batch of `batch` prompts of `prompt_len` tokens prefilled at once, the first `cached` of
// each already in the cache.
IterationShape prefill_shape(std::int64_t batch, std::int64_t prompt_len, std::int64_t window = 0,
                             std::int64_t cached = 0);
// A static batch's prefill (SCENARIO.md `inference`): `batch` prompts of prompt_len tokens
// whose first prefix_tokens are already cached (prefix caching): the rest prefilled, attending
// to the whole prompt.
IterationShape prompt_shape(const InferenceWorkload& w, std::int64_t window = 0);
// One decode step of `batch` sequences, each with `context` tokens after the new one.
IterationShape decode_shape(std::int64_t batch, std::int64_t context, std::int64_t window = 0);

// The ops of transformer layer `layer` for this iteration on one GPU of the TP group.
// shared_kv_group: StackSpec::serving_decode_shared_kv_group (0: every GQA group shares);
// cuda_core_group: StackSpec::serving_decode_cuda_core_group (0: decode on tensor cores);
// prefix_on_fa2: StackSpec::serving_prefix_attention_fa2.
std::vector<LayerOp> build_iteration_layer_ops(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                               const InferenceWorkload& workload, const IterationShape& shape,
                                               int shared_kv_group = 0, int cuda_core_group = 0,
                                               bool prefix_on_fa2 = false);

// Before the first layer (first stage) and after the last one (last stage).
std::vector<LayerOp> build_iteration_embedding_ops(const ModelSpec& model, const Plan& plan,
                                                   const InferenceWorkload& workload, const IterationShape& shape);
std::vector<LayerOp> build_iteration_head_ops(const ModelSpec& model, const Plan& plan,
                                              const InferenceWorkload& workload, const IterationShape& shape);

// Whether `op_name` is a routed experts' GEMM (their up or gate-up, their down): the ops whose
// weights are in InferenceWorkload::experts_dtype().
bool routed_expert_gemm(std::string_view op_name);

// Expected distinct experts of `experts` that `tokens` tokens visit with top_k routing,
// routing taken as uniform and independent: E (1 - (1 - k/E)^T).
double expected_experts_touched(int experts, int top_k, std::int64_t tokens);

}  // namespace twinsim
