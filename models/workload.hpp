#pragma once
// What the GPUs are asked to do: one training step, or serving a batch of requests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "models/dtype.hpp"
#include "models/lora.hpp"
#include "models/speculative.hpp"

namespace twinsim {

enum class Optimizer { adam, sgd };

// A flat file of token ids (nanoGPT's / Megatron's .bin: little-endian uint16 or uint32,
// no header) the executor trains on; empty path: its seeded synthetic tokens. The
// simulator prices the same step either way.
struct TokenFile {
  std::string path;
  int token_bytes = 2;  // uint16: 2, uint32: 4
};

// The optimizer's settings (training.optimizer as a mapping). The executor applies them;
// the simulator prices what changes the step's time: the gradient clipping's norm.
enum class LrDecay { constant, linear, cosine };
struct OptimizerSettings {
  double lr = 1e-3;  // peak learning rate
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam(W)
  double weight_decay = 0.01;  // decoupled (AdamW), on weights but not biases and norms
  double grad_clip = 0;        // clip the global gradient norm to this; 0: no clipping
  int warmup_steps = 0;        // linear warm-up from lr / warmup_steps
  LrDecay decay = LrDecay::constant;
  int decay_steps = 0;         // after warm-up, to min_lr
  double min_lr = 0;

  // The learning rate of step `step` (0-based): (step + 1) / warmup_steps x lr during the
  // warm-up, then linear or cosine to min_lr over decay_steps, min_lr after (Megatron's
  // OptimizerParamScheduler shapes).
  double lr_at(int step) const {
    if (step < warmup_steps) return lr * static_cast<double>(step + 1) / warmup_steps;
    if (decay == LrDecay::constant || decay_steps <= 0) return lr;
    const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / decay_steps);
    const double shape = decay == LrDecay::linear ? 1.0 - progress : 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
    return min_lr + (lr - min_lr) * shape;
  }
};

struct TrainingWorkload {
  std::int64_t seq_len = 2048;
  std::int64_t global_batch = 1;  // sequences per optimizer step
  std::int64_t micro_batch = 1;   // sequences per forward/backward pass on one replica
  Dtype precision = Dtype::bf16;
  Optimizer optimizer = Optimizer::adam;
  TokenFile data;  // training.data
  OptimizerSettings optim;  // training.optimizer's settings (defaults: the executor's AdamW)
  // training.lora: the base frozen (weights only, in lora->base), low-rank adapters trained
  // (models/lora.hpp); none: every parameter trained
  std::optional<LoraSpec> lora;

  // Micro-batches each data-parallel replica runs per step (gradient accumulation).
  std::int64_t micro_batches(int dp) const { return global_batch / (micro_batch * dp); }
};

// Prefill/decode disaggregation (DistServe, Zhong et al. 2024; Splitwise, Patel et al. 2024;
// vLLM's disaggregated prefilling): prompts run on a pool of prefill replicas, which sample
// each request's first token and send its K,V to a pool of decode replicas that generate
// the rest. The scenario's plan is a decode replica's.
struct Disaggregation {
  int prefill_replicas = 1;
  int prefill_tp = 0;  // 0: plan.tp
  int decode_replicas = 1;
  bool kv_over_nvlink = false;  // kv_link: intra_node (both pools in one node); else over the NICs
  int prefill_tp_or(int plan_tp) const { return prefill_tp > 0 ? prefill_tp : plan_tp; }
};

struct InferenceWorkload {
  std::int64_t prompt_len = 2048;
  std::int64_t output_len = 128;
  std::int64_t batch = 1;  // concurrent sequences
  // Prefix caching: every prompt opens with the same prefix_tokens (a shared system prompt)
  // whose K,V are already cached, computed once by an earlier request; the prefill computes
  // the other prompt_len - prefix_tokens tokens, which attend to the whole prompt. 0: none.
  std::int64_t prefix_tokens = 0;
  Dtype weight_dtype = Dtype::bf16;
  // The routed experts' weights where they differ from the other linear layers' (an engine
  // whose MoE kernel has no path for weight_dtype keeps them 16-bit: TensorRT-LLM <= 0.9);
  // unset: weight_dtype. experts_dtype() is what the memory and the passes use.
  std::optional<Dtype> expert_weight_dtype;
  Dtype experts_dtype() const { return expert_weight_dtype.value_or(weight_dtype); }
  // fp8 weights with one scale a 128 x 128 block and activations one a 1 x 128 group (DeepSeek-V3's
  // format, Qwen's own FP8 releases; inference.fp8_scaling: block), not one scale a tensor (ModelOpt)
  bool fp8_block_scales = false;
  Dtype kv_dtype = Dtype::bf16;
  std::optional<SpeculativeDecoding> speculative;  // none: one token per sequence per decode step
  std::optional<Disaggregation> disaggregation;    // none: every replica prefills and decodes
};

std::string_view to_string(Optimizer o);
bool parse_optimizer(std::string_view name, Optimizer& out);

}  // namespace twinsim
