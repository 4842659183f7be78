#include "sim/inference/trtllm_kv_pool.hpp"

#include <algorithm>

#include "models/checked_math.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/reserved_memory.hpp"
#include "sim/memory/stage_layers.hpp"

namespace twinsim {

std::int64_t cutlass_moe_workspace_bytes(std::int64_t rows, std::int64_t hidden, std::int64_t inter, int top_k,
                                         double act_bytes) {
  const double m = static_cast<double>(checked_mul(rows, top_k));  // expanded rows
  const double h = static_cast<double>(hidden);
  const double i = static_cast<double>(inter);
  const double inputs = m * std::max({h * act_bytes, h * 2, i * act_bytes});  // overlapped_gemm1_gemm2_inputs
  const double outputs = m * std::max({i * act_bytes, 2 * i * 2, h * 2});     // overlapped_gemm1_gemm2_outputs
  return static_cast<std::int64_t>(inputs + outputs + 20 * m);
}

namespace {

// Bytes a value of the experts' GEMM input: the op quantizes the activations to fp8 or nvfp4
// with fp8 or nvfp4 experts (FP8QDQFusedMoEMethod, NVFP4CutlassFusedMoEMethod); bf16 otherwise.
double moe_input_bytes(Dtype experts) {
  if (experts == Dtype::fp8) return 1;
  if (experts == Dtype::nvfp4) return 0.5;
  return 2;
}

// Token sets the MoE op sees at once: under attention DP CutlassFusedMoE all-gathers every rank's
// tokens before the op (fused_moe_cutlass.py; moe_max_num_tokens defaults to max_num_tokens x
// dp_size, so nothing is chunked): the expert group's ep x etp ranks over the tp that share tokens.
std::int64_t gathered_token_sets(const Plan& plan) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(plan.ep) * plan.etp() / plan.tp);
}

// A MoE layer's working set at `tokens` tokens a rank: the rank's three hidden streams (input,
// residual, norm output, bf16), the gathered quantized input with its routing (top_k x (int32
// expert + fp32 scale)), the op's workspace and its bf16 output for the gathered rows.
std::int64_t moe_layer_bytes(const Scenario& s, std::int64_t tokens) {
  const MoeSpec& moe = *s.model.moe;
  const std::int64_t rows = checked_mul(tokens, gathered_token_sets(s.plan));
  const double act = moe_input_bytes(s.inference->experts_dtype());
  const std::int64_t streams = 3 * dtype_bytes(Dtype::bf16, checked_mul(tokens, s.model.hidden));
  const double gathered = static_cast<double>(rows) * (static_cast<double>(s.model.hidden) * (act + 2) + moe.top_k * 8);
  const std::int64_t workspace =
      cutlass_moe_workspace_bytes(rows, s.model.hidden, moe.expert_ffn_hidden / s.plan.etp(), moe.top_k, act);
  return checked_add(checked_add(streams, static_cast<std::int64_t>(gathered)), workspace);
}

// The peak of one pass of `batch` sequences of `tokens` new tokens on `stage`: the model's
// forward (prefill_activation_bytes) or, if larger, a MoE layer as TensorRT-LLM runs it.
std::int64_t pass_peak_bytes(const Scenario& s, int stage, std::int64_t batch, std::int64_t tokens) {
  InferenceWorkload pass = *s.inference;
  pass.batch = batch;
  pass.prompt_len = tokens;
  pass.prefix_tokens = 0;
  std::int64_t bytes = prefill_activation_bytes(s.model, s.plan, pass, stage);
  if (s.model.moe && stage_layers(s.model, s.plan, stage).moe > 0)
    bytes = std::max(bytes, moe_layer_bytes(s, checked_mul(batch, tokens)));
  return bytes;
}

// The largest decode batch whose CUDA graph warmup captures before the pool is sized: a padded
// batch size (CudaGraphConfig._generate_cuda_graph_batch_sizes: 1, 2, 4, 8..128 by 8, powers of 2,
// max_batch_size) of at most the estimation cache's free blocks (get_cuda_graph_warmup_request).
// That cache holds the dummy requests' blocks (_get_token_num_for_estimation: prompt + 2 tokens
// with the overlap scheduler, in blocks of `block` tokens, its tokens_per_block), tp_size times
// under attention DP.
std::int64_t captured_graph_batch(const Scenario& s, std::int64_t max_tokens, std::int64_t max_batch,
                                  std::int64_t block) {
  const std::int64_t prompt = std::min(max_tokens, s.inference->prompt_len + s.inference->output_len - 1);
  const std::int64_t whole = max_tokens / prompt, rest = max_tokens % prompt;
  std::int64_t blocks = whole * blocks_for_tokens(prompt + 2, block);
  if (rest > 0) blocks += blocks_for_tokens(rest + 2, block);
  blocks *= gathered_token_sets(s.plan);  // the attention-DP ranks' copies (1 without)
  const std::int64_t cap = std::min(blocks, max_batch);
  if (cap >= max_batch) return max_batch;
  if (cap >= 256) return std::int64_t{1} << (63 - __builtin_clzll(static_cast<unsigned long long>(cap)));
  if (cap >= 8) return std::min<std::int64_t>(128, cap / 8 * 8);
  return cap >= 4 ? 4 : (cap >= 2 ? 2 : 1);
}

}  // namespace

StageKvCapacity trtllm_stage_kv(const Scenario& s, const KvCacheConfig& config, int stage) {
  const InferenceWorkload& w = *s.inference;
  StageKvCapacity st;
  st.stage = stage;
  st.usable_bytes = s.cluster.gpu.memory_bytes;  // torch.cuda.mem_get_info's total
  st.weight_bytes = inference_gpu_weight_bytes(s.model, s.plan, w, stage) + draft_weight_bytes(s.plan, w);
  // torch's allocated peak over the weights: the dummy context pass, max_num_tokens a rank
  st.activation_bytes = pass_peak_bytes(s, stage, 1, config.max_batched_tokens);
  // outside torch's allocations: the CUDA context, NCCL's buffers and cuBLAS's workspace, and the
  // pool the captured CUDA graphs keep (their largest decode step's working set)
  InferenceWorkload profile = w;
  profile.batch = 1;
  profile.prompt_len = config.max_batched_tokens;
  const std::int64_t graphs =
      config.graph_sequences > 0
          ? pass_peak_bytes(
                s, stage,
                captured_graph_batch(s, config.max_batched_tokens, config.graph_sequences, config.block_tokens), 1)
          : 0;
  st.buffer_bytes = kCudaContextBytes + inference_buffers(s.model, s.plan, profile).total() + graphs;
  // kv = fraction x (total - peak - outside)
  const std::int64_t free = st.usable_bytes - st.weight_bytes - st.buffer_bytes - st.activation_bytes;
  st.kv_bytes = std::max<std::int64_t>(0, static_cast<std::int64_t>(config.free_fraction * static_cast<double>(free)));
  return st;
}

}  // namespace twinsim
