#include "sim/inference/trtllm_bench_limits.hpp"

#include <algorithm>
#include <cmath>

#include "models/param_count.hpp"

namespace twinsim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// tuning.py BYTES_PER_ELEM by quant algo: FP8 1, NVFP4 0.5, anything else 2.
double bytes_per_elem(Dtype d) {
  if (d == Dtype::fp8) return 1;
  if (d == Dtype::nvfp4) return 0.5;
  return 2;
}

// ModelConfig.param_count: the checkpoint's element count from its safetensors metadata. An
// NVFP4 checkpoint (ModelOpt) stores its linear weights two to a uint8 element with one fp8
// scale per 16 values; the embedding and the LM head stay 16-bit.
double checkpoint_elements(const ModelSpec& m, Dtype weights) {
  const ParamCount c = count_params(m);
  const double unquantized = static_cast<double>(c.embedding + c.output_layer);
  const double linear = static_cast<double>(c.total) - unquantized;
  return weights == Dtype::nvfp4 ? linear * (0.5 + 1.0 / 16) + unquantized : static_cast<double>(c.total);
}

// round x up to a multiple of step
double round_up(double x, double step) { return step * std::ceil(x / step); }

}  // namespace

EngineLimits trtllm_bench_finetune(double kv_max_requests, std::int64_t isl, std::int64_t osl, int pp) {
  // batch capped for the decoder's buffers, tokens for the activation buffer
  const double raw_bs = std::min(kv_max_requests, 4096.0) / pp;
  const double raw_token = std::min(raw_bs * (1 + static_cast<double>(isl) / static_cast<double>(osl)), 32768.0);
  double bs = 0;  // optimistic tuning: at least 64, then 32 / 128 / 256 steps
  if (raw_bs < 256) bs = std::max(64.0, round_up(raw_bs, 32));
  else if (raw_bs < 1024) bs = round_up(raw_bs, 128);
  else bs = round_up(raw_bs, 256);
  double tokens = 0;  // at least 2048 "to ensure Ctx/Gen overlap efficiency", then 256 / 512 / 1024 steps
  if (raw_token < 4096) tokens = std::max(2048.0, round_up(raw_token, 256));
  else if (raw_token < 8192) tokens = round_up(raw_token, 512);
  else tokens = round_up(raw_token, 1024);
  return {static_cast<std::int64_t>(bs), static_cast<std::int64_t>(tokens)};
}

EngineLimits trtllm_bench_limits(const Scenario& s, double fraction) {
  const ModelSpec& m = s.model;
  const InferenceWorkload& w = *s.inference;
  // trtllm-bench's --tp spans attention DP's ranks too (--tp 8 --ep 8 with enable_attention_dp)
  const int tp = s.plan.tp * s.plan.dp;
  const int gpus = tp * s.plan.pp;
  // K and V of every attention layer, at least one KV head a TP rank, in GiB a token
  const double kv_heads = static_cast<double>(std::max<std::int64_t>(tp, m.kv_heads));
  const double gib_per_token = 2 * static_cast<double>(m.layers) * kv_heads * static_cast<double>(m.head_dim) *
                               bytes_per_elem(w.kv_dtype) / kGiB;
  const double engine_gib = checkpoint_elements(m, w.weight_dtype) * bytes_per_elem(w.weight_dtype) / kGiB;
  const double total_gib = static_cast<double>(s.cluster.gpu.memory_bytes) / kGiB * gpus;  // NVML's total
  const double cache_gib = (total_gib - engine_gib) * fraction;
  const double requests = cache_gib / (gib_per_token * static_cast<double>(w.prompt_len + w.output_len));
  return trtllm_bench_finetune(std::max(requests, 0.0), w.prompt_len, w.output_len, s.plan.pp);
}

}  // namespace twinsim
