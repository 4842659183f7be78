#include "scenario/validate.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <numeric>
#include <string>
#include <utility>

#include "hardware/clock_spread.hpp"
#include "hardware/core_sharing.hpp"
#include "hardware/prefill_attention.hpp"
#include "models/optimizer_state.hpp"
#include "models/pipeline_split.hpp"
#include "models/plan_fields.hpp"
#include "scenario/default_stack.hpp"
#include "scenario/errors.hpp"

namespace twinsim {

namespace {

std::string kv(const std::string& key, std::int64_t value) { return key + "=" + std::to_string(value); }

void require_divides(const std::string& key, std::int64_t degree, const std::string& what,
                     std::int64_t amount) {
  if (amount % degree != 0)
    throw ScenarioError(key, std::to_string(degree), "does not divide " + kv(what, amount));
}

// fp8 GEMMs reach another fraction of their doubled peak than 16-bit ones (H100: 70.9%
// against 80.3% at the best shape, S. Bekman's MAMF table), and fp4 ones another again
// (GB200, cuBLASLt: 76% of its 4x peak at 8192^3, against 56% for fp8): a low-precision
// math type needs a measured curve of its own rather than the 16-bit one.
void require_own_gemm_curve(const GpuSpec& gpu, Dtype math, const std::string& field) {
  if (gpu.has_peak(math) && !gpu.gemm_efficiency_by_dtype.contains(math))
    throw ScenarioError(field, std::string(to_string(math)),
                        "needs the GPU's measured " + std::string(to_string(math)) +
                            " GEMM curve, cluster.gpu.gemm_efficiency_by_dtype." + std::string(to_string(math)) +
                            ", which GPU " + gpu.name + " does not give");
}

// A stack's attention kernel other than FlashAttention-2 needs the GPU's own curves for it.
void require_attention_kernel_curves(const Scenario& s) {
  const std::string& kernel = s.stack.attention_kernel;
  if (kernel == kFlash2Attention || kernel == kSdpaFlashAttention || picked_by_device(kernel) ||
      s.cluster.gpu.attention_kernel_efficiency_by_seq.contains(kernel))
    return;  // sdpa_flash: the README's FlashAttention-2 curves where the GPU has none of its own
  throw ScenarioError("stack.attention_kernel", kernel,
                      "needs the GPU's measured curves for that kernel, cluster.gpu.attention_kernel_efficiency_by_seq." +
                          kernel + ", which " + s.cluster.gpu.name + " does not have (flash2 uses its "
                          "attention_efficiency_by_seq)");
}

// A serving engine's prefill kernel the scenario names needs the GPU's causal curve for it
// (flash2: the GPU's own); a stack preset's falls back to none instead (prefill_attention.hpp).
void require_prefill_attention_curves(const Scenario& s) {
  const std::string& kernel = s.stack.serving_prefill_attention;
  const GpuSpec& gpu = s.cluster.gpu;
  if (kernel.empty() || s.stack.serving_prefill_attention_from_preset || measures_causal_attention(gpu, kernel)) return;
  throw ScenarioError("stack.serving_prefill_attention", kernel,
                      "needs the GPU's causal curves for that kernel, cluster.gpu.attention_kernel_efficiency_by_seq." +
                          kernel + " (flash2: attention_efficiency_by_seq), which " + gpu.name + " does not have");
}

// A fused linear cross-entropy (Liger-Kernel's) runs the whole vocabulary on each GPU and is
// Hugging Face's loss patched: no tensor-parallel vocabulary, not the hf_eager census's loss.
void require_fused_linear_loss_scope(const Scenario& s) {
  if (!s.stack.fused_linear_loss()) return;
  const std::string why = "(stack.loss_kernel fused_linear: Liger-Kernel's fused linear cross-entropy, which is "
                          "not vocabulary-parallel and replaces Hugging Face's loss)";
  if (s.plan.tp > 1) throw ScenarioError("plan.tp", std::to_string(s.plan.tp), "must be 1 " + why);
  if (s.stack.hf_modeling())
    throw ScenarioError("stack.layer_kernels", s.stack.layer_kernels,
                        "counts Hugging Face's own loss on fp32 logits " + why);
}

// LitGPT's census (models/litgpt_census) was counted for its LoRA on q and v of a multi-head
// Llama with a bf16 or NF4 base (its finetune/lora.py defaults, the resource tables' runs).
void require_litgpt_scope(const Scenario& s) {
  if (!s.stack.litgpt()) return;
  const std::string why =
      " (stack.layer_kernels litgpt_bf16: LitGPT's LoRA layer as counted, r on q and v, a "
      "multi-head Llama, a bf16 or nf4 base)";
  if (!s.training->lora) throw ScenarioError("training.lora", "", "must be set" + why);
  const LoraSpec& lora = *s.training->lora;
  const unsigned q_and_v = (1u << static_cast<int>(LoraModule::q)) | (1u << static_cast<int>(LoraModule::v));
  if (lora.modules != q_and_v) throw ScenarioError("training.lora.target_modules", "", "must be [q, v]" + why);
  if (lora.base != LoraBase::bf16 && lora.base != LoraBase::nf4)
    throw ScenarioError("training.lora.base_dtype", "", "must be bf16 or nf4" + why);
  if (s.model.kv_heads != s.model.heads)
    throw ScenarioError("model.kv_heads", std::to_string(s.model.kv_heads), "must equal model.heads" + why);
}

// The stack's hf_eager and hf_bf16 censuses (sim/training/eager_kernels) were counted on
// Hugging Face's Llama modeling code, single-GPU layers under bf16/fp16 autocast or on a bf16
// model: other architectures run other kernels, and tensor, pipeline, context and expert
// parallelism are not its code.
void require_hf_eager_scope(const Scenario& s) {
  if (!s.stack.hf_modeling()) return;
  const ModelSpec& m = s.model;
  const auto refuse = [&](const std::string& field, const std::string& value, const std::string& why) {
    throw ScenarioError(field, value,
                        why + " (stack.layer_kernels " + s.stack.layer_kernels +
                            ": the census of Hugging Face's eager Llama, Qwen2 and Qwen3 layers, RMSNorm, RoPE, "
                            "SwiGLU, dense attention and FFN, one GPU's layers)");
  };
  if (m.norm != Norm::rmsnorm) refuse("model.norm", "layernorm", "is not counted");
  if (m.activation != Activation::swiglu) refuse("model.activation", std::string(to_string(m.activation)), "is not counted");
  if (m.position != Position::rope) refuse("model.position", "learned", "is not counted");
  if (m.bias) refuse("model.bias", "true", "is not counted (q, k, v biases are: model.qkv_bias)");
  if (m.moe) refuse("model.moe", "", "is not counted");
  if (m.mla) refuse("model.mla", "", "is not counted");
  if (m.sandwich_norm) refuse("model.sandwich_norm", "true", "is not counted");
  // a window shorter than the sequence makes HF build a windowed mask for SDPA; the census ran
  // it causal, maskless
  if (m.sliding_window > 0 && m.sliding_window < s.training->seq_len)
    refuse("model.sliding_window", std::to_string(m.sliding_window), "shorter than the sequence is not counted");
  if (m.dropout > 0) refuse("model.dropout", std::to_string(m.dropout), "is not counted");
  if (m.mtp_layers > 0) refuse("model.mtp_layers", std::to_string(m.mtp_layers), "is not counted");
  const Plan& p = s.plan;
  for (const auto& [field, size] : {std::pair{"plan.tp", p.tp}, {"plan.pp", p.pp}, {"plan.cp", p.cp}, {"plan.ep", p.ep}})
    if (size != 1) refuse(field, std::to_string(size), "must be 1");
  const Dtype precision = s.training->precision;
  if (precision != Dtype::bf16 && precision != Dtype::fp16)
    refuse("training.precision", std::string(to_string(precision)),
           s.stack.hf_eager() ? "must be bf16 or fp16 (autocast's)" : "must be bf16 or fp16 (the model's)");
  if (p.recompute == Recompute::selective)
    refuse("plan.recompute", "selective", "is Megatron's (gradient checkpointing recomputes whole layers: full)");
  // DeepSpeed's offload moves a 16-bit model's fp32 master and moments (and under ZeRO-3 its
  // parameter shard) to the host, which hf_bf16's memory model counts as the fused stacks';
  // torch.amp's fp32 model has no such split
  if (s.stack.hf_eager()) {
    if (p.offload_optimizer) refuse("plan.offload_optimizer", "true", "is DeepSpeed's, not counted for autocast's fp32 model");
    if (p.offload_params) refuse("plan.offload_params", "true", "is DeepSpeed's, not counted for autocast's fp32 model");
  }
  if (p.offload_activations_layers > 0)
    refuse("plan.offload_activations_layers", std::to_string(p.offload_activations_layers), "is not counted");
  if (p.gradient_compression != GradCompression::none)
    refuse("plan.gradient_compression", std::string(to_string(p.gradient_compression)), "is not counted");
  require_litgpt_scope(s);
}

void resolve_world(Scenario& s) {
  Plan& p = s.plan;
  ClusterSpec& c = s.cluster;
  const std::int64_t model_parallel = static_cast<std::int64_t>(p.tp) * p.pp * p.cp;
  if (p.dp == 0) {
    if (c.nodes == 0) {
      p.dp = 1;  // a catalog node type grows to what the plan needs
    } else {
      if (c.gpus() % model_parallel != 0)
        throw ScenarioError("plan", "tp*pp*cp=" + std::to_string(model_parallel),
                            "does not divide the cluster's " + std::to_string(c.gpus()) + " GPUs");
      p.dp = static_cast<int>(c.gpus() / model_parallel);
    }
  }
  const std::int64_t world = p.world_size();
  if (c.nodes == 0) {
    c.nodes = static_cast<int>((world + c.gpus_per_node - 1) / c.gpus_per_node);
  } else if (world != c.gpus()) {
    throw ScenarioError("plan.dp", std::to_string(p.dp),
                        "gives a world size tp*pp*cp*dp=" + std::to_string(world) +
                            " that does not match the cluster's " + std::to_string(c.nodes) + " nodes x " +
                            std::to_string(c.gpus_per_node) + " GPUs = " + std::to_string(c.gpus()));
  }
  if (c.nodes > 1 && c.inter_node.bandwidth_Bps <= 0)
    throw ScenarioError("cluster.inter_node", "", "is required: the plan needs " + std::to_string(c.nodes) + " nodes");
  // a training step synchronises every GPU; a serving replica only its own
  if (c.clock_spread > 0)
    c.straggler = slowest_member_lag(c.clock_spread, s.training ? world : model_parallel);
  // a CPU host calibrated with every core busy: a plan alone on it runs faster
  apply_core_sharing(c, std::min<std::int64_t>(world, c.gpus_per_node));
  apply_cache_sharing(c, std::min<std::int64_t>(world, c.gpus_per_node));
}

// `model_key` names the model in messages ("model", or a draft model's key), `tp_key` the
// degree ("plan.tp", or a prefill pool's).
void validate_tensor_parallel(const ModelSpec& m, int tp, bool training, const std::string& model_key,
                              const std::string& tp_key = "plan.tp", bool experts_follow_tp = true) {
  require_divides(tp_key, tp, model_key + ".heads", m.heads);
  // Megatron splits query groups over TP ranks; serving engines replicate KV heads instead
  if (training) {
    require_divides(tp_key, tp, model_key + ".kv_heads", m.kv_heads);
  } else if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0) {
    throw ScenarioError(tp_key, std::to_string(tp),
                        "neither divides nor is a multiple of " + kv(model_key + ".kv_heads", m.kv_heads));
  }
  require_divides(tp_key, tp, model_key + ".ffn_hidden", m.ffn_hidden);
  if (m.moe && experts_follow_tp) require_divides(tp_key, tp, model_key + ".moe.expert_ffn_hidden", m.moe->expert_ffn_hidden);
}

// The draft model runs beside the served one on the same GPUs, split over the same TP
// group, proposing tokens of the same vocabulary.
void validate_speculative(const Scenario& s) {
  const SpeculativeDecoding& d = *s.inference->speculative;
  if (s.plan.pp != 1)
    throw ScenarioError("inference.speculative", "", "is modelled without pipeline parallelism (plan.pp=" +
                                                         std::to_string(s.plan.pp) + ", needs 1)");
  if (s.plan.ep != 1)
    throw ScenarioError("inference.speculative", "", "is modelled without expert parallelism (plan.ep=" +
                                                         std::to_string(s.plan.ep) + ", needs 1)");
  if (!d.draft_model) return;
  const std::string key = "inference.speculative.draft_model";
  if (d.draft_model->vocab != s.model.vocab)
    throw ScenarioError(key + ".vocab", std::to_string(d.draft_model->vocab),
                        "must equal " + kv("model.vocab", s.model.vocab) + " (the draft proposes the served model's tokens)");
  validate_tensor_parallel(*d.draft_model, s.plan.tp, false, key);
}

// The pools are replicas of one stage each (the plan is a decode replica's); a prefill
// replica splits the model over its own TP group.
void validate_disaggregation(const Scenario& s) {
  const Disaggregation& d = *s.inference->disaggregation;
  const std::string key = "inference.disaggregation";
  for (const auto& [degree, value] : {std::pair<const char*, int>{"plan.pp", s.plan.pp}, {"plan.ep", s.plan.ep},
                                      {"plan.dp", s.plan.dp}})
    if (value != 1)
      throw ScenarioError(key, "", std::string("is modelled for replicas of one stage without expert or data "
                                               "parallelism of their own (") + degree + "=" + std::to_string(value) +
                                       ", needs 1; the pools' replicas are " + key + "'s)");
  const int prefill_tp = d.prefill_tp_or(s.plan.tp);
  validate_tensor_parallel(s.model, prefill_tp, false, "model", key + ".prefill_tp");
  const std::int64_t gpus = static_cast<std::int64_t>(d.prefill_replicas) * prefill_tp +
                            static_cast<std::int64_t>(d.decode_replicas) * s.plan.tp;
  if (d.kv_over_nvlink && gpus > s.cluster.gpus_per_node)
    throw ScenarioError(key + ".kv_link", "intra_node",
                        "needs both pools in one node: " + std::to_string(gpus) + " GPUs, the node has " +
                            std::to_string(s.cluster.gpus_per_node));
}

// DualPipe pairs each rank's stage with its mirror and sends half the micro-batches each way;
// dualpipe.py (DualPipe.step) asserts num_ranks % 2 == 0, num_chunks % 2 == 0 and num_chunks >=
// num_ranks * 2.
void check_dualpipe(const Plan& p, std::int64_t micro_batches) {
  if (p.pp < 2 || p.pp % 2 != 0)
    throw ScenarioError("plan.schedule", "dualpipe",
                        "needs an even " + kv("plan.pp", p.pp) + " (a rank and its mirror)");
  if (micro_batches % 2 != 0 || micro_batches < 2 * p.pp)
    throw ScenarioError("plan.schedule", "dualpipe",
                        "needs an even number of micro-batches, at least 2 * plan.pp = " + std::to_string(2 * p.pp) +
                            " (half go each way); the step has " + std::to_string(micro_batches));
  // ZeRO 2/3 reduce (and gather) per micro-batch and chunk: not modelled with two chunks a rank
  if (p.shards_grads())
    throw ScenarioError("plan.schedule", "dualpipe",
                        "with " + kv("plan.zero", p.zero) + " is not modelled (DeepSeek-V3 runs ZeRO-1, §3.2)");
}

void resolve_stages(Scenario& s) {
  Plan& p = s.plan;
  const std::int64_t layers = s.model.layers;
  if (p.virtual_stages > 1 && p.schedule != Schedule::interleaved)
    throw ScenarioError("plan.virtual_stages", std::to_string(p.virtual_stages),
                        "needs plan.schedule=interleaved");
  if (p.stage_layers.empty() && accounts_in_split(p)) {
    // Megatron-core asserts the same (TransformerConfig: num_layers + embedding + loss divisible)
    p.stage_layers = accounted_stage_layers(layers, p);
    if (p.stage_layers.empty())
      throw ScenarioError(p.account_for_embedding_in_pipeline_split ? "plan.account_for_embedding_in_pipeline_split"
                                                                    : "plan.account_for_loss_in_pipeline_split",
                          "true",
                          "needs model.layers=" + std::to_string(layers) +
                              " and the embedding and loss it counts as layers to divide into plan.pp x virtual "
                              "stages (" +
                              std::to_string(p.pp * chunks_per_stage(p)) + ")");
  } else if (p.stage_layers.empty()) {
    require_divides("plan.pp", p.pp, "model.layers", layers);
    p.stage_layers.assign(p.pp, static_cast<int>(layers / p.pp));
  } else {
    if (static_cast<std::int64_t>(p.stage_layers.size()) != p.pp)
      throw ScenarioError("plan.stage_layers", std::to_string(p.stage_layers.size()) + " entries",
                          "must have plan.pp=" + std::to_string(p.pp) + " entries");
    const std::int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), std::int64_t{0});
    if (sum != layers)
      throw ScenarioError("plan.stage_layers", "sum " + std::to_string(sum),
                          "does not add up to " + kv("model.layers", layers));
  }
  // a stage's layers split into its virtual stages as evenly as they go (models/pipeline_split),
  // the embedding or the loss standing in for a layer where the plan counts them
  for (std::size_t i = 0; i < p.stage_layers.size(); ++i) {
    const int units = p.stage_layers[i] + split_extras(p, static_cast<int>(i));
    if (units < p.virtual_stages)
      throw ScenarioError("plan.virtual_stages", std::to_string(p.virtual_stages),
                          "exceeds the " + std::to_string(units) + " layers of stage " + std::to_string(i) +
                              " (every virtual stage needs a layer)");
  }
}

// MoE parallel folding (Liu et al. 2025, arXiv:2504.14960; Megatron-core's parallel_state):
// the experts' own groups, expert_tp ranks of expert tensor parallelism inside ep ranks of
// expert parallelism, tile each pipeline stage's tp x cp x dp ranks apart from attention's
// groups (initialize_model_parallel: world size % (expert_tp x ep x pp) == 0).
void validate_expert_layout(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const int etp = p.etp();
  const std::string etp_key = p.expert_tp > 0 ? "plan.expert_tp" : "plan.tp";
  if (p.expert_tp > 0 && !m.moe)
    throw ScenarioError("plan.expert_tp", std::to_string(p.expert_tp), "needs a mixture-of-experts model (model.moe)");
  if (m.moe) require_divides(etp_key, etp, "model.moe.expert_ffn_hidden", m.moe->expert_ffn_hidden);
  const std::int64_t stage_ranks = static_cast<std::int64_t>(p.tp) * p.cp * p.dp;
  if (stage_ranks % (static_cast<std::int64_t>(p.ep) * etp) != 0)
    throw ScenarioError("plan.ep", std::to_string(p.ep),
                        "times " + kv(etp_key, etp) + " does not divide the stage's " +
                            kv("plan.tp*plan.cp*plan.dp", stage_ranks) +
                            " ranks (Megatron-core lays the experts' EP x ETP groups over them)");
  // Megatron-core's MoE README ("Parallelism"): expert and tensor parallelism together need
  // sequence parallelism; the experts' own TP reads the sequence-split tokens as well
  const bool folded_tp = p.etp() != p.tp || p.ep > 1;
  if (m.moe && p.tp > 1 && folded_tp && !p.sequence_parallel)
    throw ScenarioError("plan.sequence_parallel", "false",
                        "must be true with " + kv("plan.tp", p.tp) + " and " +
                            (p.ep > 1 ? kv("plan.ep", p.ep) : kv("plan.expert_tp", etp)) +
                            " (Megatron-core's MoE needs sequence parallelism with expert and tensor parallelism)");
}

// Serving's experts under EP inside attention's TP group (plan.expert_tp below plan.tp): the
// engines lay moe_ep x moe_tp over the tp ranks (TensorRT-LLM's Mapping asserts moe_tp_size x
// moe_ep_size == tp_size; vLLM's --enable-expert-parallel makes EP = TP x DP with whole experts;
// SGLang's --ep-size leaves moe_tp = tp / ep_size), one such group per plan.dp replica.
void validate_serving_experts_in_tp(const Scenario& s) {
  const Plan& p = s.plan;
  const std::string value = std::to_string(p.expert_tp);
  if (!s.model.moe) throw ScenarioError("plan.expert_tp", value, "needs a mixture-of-experts model (model.moe)");
  if (p.expert_tp > p.tp)
    throw ScenarioError("plan.expert_tp", value,
                        "exceeds " + kv("plan.tp", p.tp) + ": serving's experts lie inside attention's TP group");
  if (static_cast<std::int64_t>(p.ep) * p.expert_tp != p.tp)
    throw ScenarioError("plan.ep", std::to_string(p.ep),
                        "times " + kv("plan.expert_tp", p.expert_tp) + " must equal " + kv("plan.tp", p.tp) +
                            " (the engines split attention's TP ranks into moe_ep x moe_tp)");
  if (p.cp != 1 || p.pp != 1)
    throw ScenarioError(p.cp != 1 ? "plan.cp" : "plan.pp", std::to_string(p.cp != 1 ? p.cp : p.pp),
                        "must be 1 with serving's experts inside attention's TP group (not modelled)");
  require_divides("plan.expert_tp", p.expert_tp, "model.moe.expert_ffn_hidden", s.model.moe->expert_ffn_hidden);
}

void validate_parallel_degrees(const Scenario& s) {
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  if (p.ep > 1 && !m.moe)
    throw ScenarioError("plan.ep", std::to_string(p.ep), "needs a mixture-of-experts model (model.moe)");
  if (m.moe) require_divides("plan.ep", p.ep, "model.moe.experts", m.moe->experts);
  if (s.inference) {  // serving's experts spread over replicas (sim/inference/iteration_ops.cpp)
    if (p.etp() != p.tp) {
      validate_serving_experts_in_tp(s);
      return;
    }
    require_divides("plan.ep", p.ep, "plan.dp*plan.cp", static_cast<std::int64_t>(p.dp) * p.cp);
    return;
  }
  validate_expert_layout(s);
}

// ZeRO++ hpZ: a secondary partition over zero_hpz_partition_size data-parallel ranks of one
// node (the data-parallel group's ranks lie tp apart, rank_layout.hpp), for ZeRO-3's per-layer gathers.
void validate_hpz(const Scenario& s) {
  const Plan& p = s.plan;
  const std::string key = "plan.zero_hpz_partition_size", value = std::to_string(p.zero_hpz_partition_size);
  if (!p.shards_params() || !p.overlap_grad_reduce)
    throw ScenarioError(key, value, "partitions ZeRO-3's parameters a second time for its per-layer gathers (ZeRO++): "
                                    "it needs plan.zero: 3 and plan.overlap_grad_reduce: true");
  const std::int64_t per_node = dp_ranks_per_node(p, s.cluster.gpus_per_node);
  if (hpz_partition(p, s.cluster.gpus_per_node) == 1)
    throw ScenarioError(key, value, "must divide the " + std::to_string(per_node) +
                                        " data-parallel ranks a node holds (cluster.gpus_per_node / plan.tp, at most plan.dp*plan.cp): "
                                        "the secondary partition stays inside a node");
}

// Hybrid sharding (plan.dp_replicate): ZeRO's states sharded over dp/dp_replicate ranks, the
// replicas all-reducing each gradient shard (sim/training/zero_comm.hpp replicate_all_reduce_s).
void validate_dp_replicate(const Scenario& s) {
  const Plan& p = s.plan;
  const std::string key = "plan.dp_replicate", value = std::to_string(p.dp_replicate);
  require_divides(key, p.dp_replicate, "plan.dp", p.dp);
  if (!p.shards_optimizer())
    throw ScenarioError(key, value,
                        "splits ZeRO's shard groups into replicas: it needs plan.zero 1, 2 or 3 (with "
                        "plan.zero: 0 every data-parallel rank is already a replica)");
  if (!s.stack.zero_hybrid_sharding)  // what the stack can run (hardware/stack_spec.hpp)
    throw ScenarioError(key, value,
                        "is PyTorch FSDP's HSDP or Megatron-core's distributed-optimizer instances; stack " +
                            s.stack.name +
                            " (stack.zero_hybrid_sharding: false, as DeepSpeed's) shards ZeRO over the whole "
                            "data-parallel group: DeepSpeed's ZeRO-3 has hpZ (plan.zero_hpz_partition_size) and "
                            "MiCS (not modelled)");
  // (plan.offload_params comes only with plan.offload_optimizer: validate_training)
  if (deepspeed_only_plan(p))
    throw ScenarioError(key, value, "with DeepSpeed's ZeRO++ or ZeRO-Offload knobs is not modelled: choose one");
  if (p.gradient_compression != GradCompression::none)
    throw ScenarioError(key, value, "with plan.gradient_compression is not modelled");
  if (p.ep > 1 || p.etp() != p.tp)
    throw ScenarioError(key, value, "with routed experts' own groups (plan.ep, plan.expert_tp) is not modelled");
}

// plan.offload_device: nvme is priced by the node's drives (cluster.host.nvme_read_GBps).
void require_nvme_drives(const Scenario& s) {
  if (!s.cluster.host.nvme_described())
    throw ScenarioError("plan.offload_device", "nvme",
                        "needs the node's NVMe drives: cluster.host.nvme_read_GBps (and nvme_write_GBps, nvme_GiB); "
                        "the catalog's azure-nd-h200-v5 carries DeepSpeed's measured 48 / 26 GB/s (8 PCIe Gen5 drives); "
                        "DeepSpeed measured 10 / 5 GB/s on 4 Gen4 drives");
}

// plan.offload_device: nvme (ZeRO-Infinity): what it moves, the stage DeepSpeed allows it
// with, and the drives' figures it is priced by.
void require_nvme_offload_scope(const Scenario& s) {
  const Plan& p = s.plan;
  const std::string key = "plan.offload_device";
  if (!p.offload_optimizer)
    throw ScenarioError(key, "nvme", "moves plan.offload_optimizer's states (and plan.offload_params' shard) to NVMe: "
                                     "it needs plan.offload_optimizer: true");
  // DeepSpeed's config reference: "NVMe offloading is available only with ZeRO stage 3"
  if (!p.shards_params()) throw ScenarioError(key, "nvme", "needs plan.zero: 3 (DeepSpeed offloads to NVMe with ZeRO-3 only)");
  require_nvme_drives(s);
}

// Serving with plan.offload_params (ZeRO-Inference, DeepSpeed's ZeRO-3 inference with
// offload_param): one GPU per replica streaming its weights, as DeepSpeed's examples run it.
void require_weight_offload_scope(const Scenario& s) {
  const Plan& p = s.plan;
  const std::string key = "plan.offload_params";
  if (p.tp != 1 || p.pp != 1)
    throw ScenarioError(key, "true", "on inference streams one GPU's weights (ZeRO-Inference): it needs plan.tp: 1 and plan.pp: 1");
  if (s.inference->speculative || s.inference->disaggregation)
    throw ScenarioError(key, "true", "on inference is priced without inference.speculative and inference.disaggregation");
  if (!s.cluster.host.described())
    throw ScenarioError(key, "true", "on inference needs cluster.host (the PCIe link the weights cross)");
  if (p.offload_device == OffloadDevice::nvme) require_nvme_drives(s);
}

// plan.recompute_modules: Megatron-core reads --recompute-modules with --recompute-granularity
// selective only; moe and shared_experts (standard checkpointing of the whole MoE layer or of
// the shared experts, their all-to-alls run again) are Megatron's but not modelled here.
void validate_recompute_modules(const Scenario& s) {
  const Plan& p = s.plan;
  if (p.recompute_modules == 0) return;
  const std::string key = "plan.recompute_modules";
  const std::string value = knob_text(ModuleSetKnob{"recompute_modules", &PlanKnobs::recompute_modules}, p);
  if (p.recompute != Recompute::selective)
    throw ScenarioError(key, value, "needs plan.recompute: selective (Megatron's --recompute-granularity selective)");
  for (RecomputeModule m : {RecomputeModule::moe, RecomputeModule::shared_experts})
    if (p.recomputes(m))
      throw ScenarioError(key, value, std::string("lists ") + std::string(to_string(m)) + ", which is not modelled "
                                      "(core_attn, moe_act, layernorm, mla_up_proj and mlp are)");
  if (p.recomputes(RecomputeModule::moe_act) && !s.model.moe)
    throw ScenarioError(key, value, "lists moe_act, which needs a mixture-of-experts model (model.moe)");
  if (p.recomputes(RecomputeModule::mla_up_proj) && !s.model.mla)
    throw ScenarioError(key, value, "lists mla_up_proj, which needs latent attention (model.mla)");
}

// Megatron-core's EP all-to-all overlap (TransformerConfig.__post_init__, core_r0.16): expert
// parallelism, virtual pipeline stages where pp > 1, no full recompute; delay_wgrad_compute only
// with the overlap.
void validate_ep_overlap(const Plan& p) {
  if (p.delay_wgrad_compute && !p.moe_a2a_overlap)
    throw ScenarioError("plan.delay_wgrad_compute", "true", "needs plan.moe_a2a_overlap: true (Megatron-core)");
  if (!p.moe_a2a_overlap) return;
  const std::string key = "plan.moe_a2a_overlap";
  if (p.ep <= 1) throw ScenarioError(key, "true", "needs expert parallelism (plan.ep > 1)");
  if (p.pp > 1 && (p.schedule != Schedule::interleaved || p.virtual_stages <= 1))
    throw ScenarioError(key, "true",
                        "with " + kv("plan.pp", p.pp) + " needs the interleaved schedule (plan.virtual_stages > 1)");
  if (p.recompute == Recompute::full) throw ScenarioError(key, "true", "is refused with plan.recompute: full");
}

// training.lora's scope: the adapters and the frozen base are counted for a dense model's
// attention and FFN layers (models/lora.hpp), trained without offloading or the eager census.
void require_lora_scope(const Scenario& s) {
  if (!s.training->lora) return;
  const LoraSpec& l = *s.training->lora;
  const ModelSpec& m = s.model;
  const Plan& p = s.plan;
  const std::string key = "training.lora";
  if (m.moe) throw ScenarioError("model.moe", "", "with " + key + " is not modelled (adapters on experts)");
  if (m.mla) throw ScenarioError("model.mla", "", "with " + key + " is not modelled (adapters on latent attention)");
  if (l.targets(LoraModule::gate) && !m.gated())
    throw ScenarioError(key + ".target_modules", "gate",
                        "names a gated MLP's gate projection; model.activation=" + std::string(to_string(m.activation)) +
                            " has up and down only");
  // fp8: the frozen base's GEMMs in fp8 (NeMo's LoRA recipe under Transformer Engine), the
  // adapters in bf16
  if (s.training->precision == Dtype::fp32 || is_fp4(s.training->precision))
    throw ScenarioError("training.precision", std::string(to_string(s.training->precision)),
                        "with " + key + " is not modelled: the adapters train in bf16 or fp16 (the base's GEMMs may run in fp8)");
  if (p.offload_optimizer || p.offload_params || p.offload_activations_layers > 0)
    throw ScenarioError(key, "", "with offloading (plan.offload_*) is not modelled");
  if (s.stack.hf_eager())
    throw ScenarioError(key, "", "with stack.layer_kernels hf_eager (an fp32 model under autocast) is not modelled");
  if (p.gradient_compression != GradCompression::none)
    throw ScenarioError(key, "", "with plan.gradient_compression is not modelled");
  // ZeRO-3 gathers the frozen base and reduces the adapters' gradients: not modelled; ZeRO-2
  // reduces them layer by layer (plan.overlap_grad_reduce), as the step prices
  if (p.shards_params()) throw ScenarioError("plan.zero", "3", "with " + key + " is not modelled: use 0-2");
  if (p.shards_grads() && !p.overlap_grad_reduce && p.dp_group_size() > 1)
    throw ScenarioError("plan.overlap_grad_reduce", "false", "with plan.zero 2 and " + key + " is not modelled");
}

// plan.fp8_activation_input and plan.fp8_attention where Megatron-core and Transformer Engine run them
// as counted (models/layer_ops.cpp): Megatron-core's TransformerConfig refuses an fp8-stored activation
// input other than SwiGLU's ("supported only for SwiGLU", transformer_config.py); fp8 attention is a
// field of the fp8 recipe, used inside fp8_autocast only, and runs on TE's cuDNN fused backend.
void validate_fp8_activation_keys(const Scenario& s) {
  const Plan& p = s.plan;
  const ModelSpec& m = s.model;
  if (p.fp8_activation_input && m.activation != Activation::swiglu)
    throw ScenarioError("plan.fp8_activation_input", "true",
                        "keeps SwiGLU's input in fp8 (Megatron-core supports it for SwiGLU only); model.activation=" +
                            std::string(to_string(m.activation)));
  if (p.fp8_activation_input && m.moe)
    throw ScenarioError("plan.fp8_activation_input", "true",
                        "on a model with routed experts (model.moe) is not modelled");
  if (!p.fp8_attention) return;
  if (s.training->precision != Dtype::fp8)
    throw ScenarioError(
        "plan.fp8_attention", "true",
        "is fp8 training's attention (Transformer Engine's fp8 recipe): it needs training.precision: fp8, "
        "not " +
            std::string(to_string(s.training->precision)));
  if (!p.flash_attention)
    throw ScenarioError(
        "plan.fp8_attention", "true",
        "runs on Transformer Engine's fused (flash-style) attention: it needs plan.flash_attention: true");
  if (m.mla) throw ScenarioError("plan.fp8_attention", "true", "with latent attention (model.mla) is not modelled");
  if (p.recompute == Recompute::selective_op)
    throw ScenarioError("plan.fp8_attention", "true",
                        "with plan.recompute: selective_op (torchtitan's) is not modelled");
}

// Megatron-core's precision-aware optimizer (plan.exp_avg_dtype, exp_avg_sq_dtype,
// main_params_dtype): Adam only (OptimizerConfig.__post_init__ asserts optimizer == 'adam'),
// the distributed optimizer only (get_megatron_optimizer raises "only supported with distributed
// optimizer"), TE's FusedAdam (a stack whose precision_aware_optimizer is true: Megatron-core's, or the
// device alone: DeepSeek-V3 §3.3.3).
void validate_precision_aware_optimizer(const Scenario& s) {
  const Plan& p = s.plan;
  if (!optimizer_state_dtypes(p).precision_aware()) return;
  const auto [key, value] = precision_aware_key(p);
  const std::string rule = "is Megatron-core's precision-aware optimizer: ";
  if (s.training->optimizer != Optimizer::adam)
    throw ScenarioError(key, value, rule + "Adam only (training.optimizer: adam)");
  if (p.zero != 1)
    throw ScenarioError(key, value,
                        rule + "it needs the distributed optimizer, plan.zero: 1, not " + std::to_string(p.zero));
  if (s.training->precision == Dtype::fp32 || s.training->precision == Dtype::tf32)
    throw ScenarioError(key, value, rule + "with fp32 training (no master copy) is not modelled");
  if (p.offload_optimizer) throw ScenarioError(key, value, rule + "with plan.offload_optimizer is not modelled");
  if (!s.stack.precision_aware_optimizer)  // what the stack can run (hardware/stack_spec.hpp)
    throw ScenarioError(key, value,
                        rule + "Transformer Engine's FusedAdam under Megatron-core; stack " + s.stack.name +
                            " (stack.precision_aware_optimizer: false) does not run it");
}

// plan.fp8_moe_act_cache (DeepSeek-V3 §3.3.2 (2), counted in models/layer_ops.cpp): an fp8 run's MoE
// SwiGLU whose output moe_act recomputation rebuilds, on a stack that keeps the checkpoint's input
// in fp8 (StackSpec::fp8_cached_moe_act: not Megatron-core's, whose checkpoint keeps 16 bits) where
// the scenario names its stack.
void validate_fp8_moe_act_cache(const Scenario& s) {
  const Plan& p = s.plan;
  if (!p.fp8_moe_act_cache) return;
  const std::string key = "plan.fp8_moe_act_cache";
  if (!s.model.moe) throw ScenarioError(key, "true", "caches the MoE SwiGLU's input: it needs model.moe");
  if (s.model.activation != Activation::swiglu)
    throw ScenarioError(
        key, "true", "caches the MoE SwiGLU's input: model.activation=" + std::string(to_string(s.model.activation)));
  if (s.training->precision != Dtype::fp8)
    throw ScenarioError(key, "true",
                        "is fp8 training's fine-grained cache (1x128 tiles): training.precision: fp8, not " +
                            std::string(to_string(s.training->precision)));
  if (!p.recomputes(RecomputeModule::moe_act))
    throw ScenarioError(key, "true",
                        "recomputes the SwiGLU's output (§3.3.2): it needs plan.recompute: selective with moe_act in "
                        "plan.recompute_modules");
  // what a named stack can run (hardware/stack_spec.hpp); the default stack (scenario/default_stack.hpp)
  // is the pricing a scenario naming none gets, not a framework it chose: no catalog framework runs this
  if (!s.stack.fp8_cached_moe_act && !s.stack_is_default)
    throw ScenarioError(key, "true",
                        "keeps the recomputed SwiGLU's input in fp8; stack " + s.stack.name +
                            " (stack.fp8_cached_moe_act: false) keeps it in 16 bits");
}

void validate_training(const Scenario& s) {
  const TrainingWorkload& t = *s.training;
  const Plan& p = s.plan;
  const ModelSpec& m = s.model;
  validate_recompute_modules(s);
  validate_ep_overlap(p);
  validate_fp8_activation_keys(s);
  validate_precision_aware_optimizer(s);
  validate_fp8_moe_act_cache(s);
  if (p.offload_optimizer && !s.cluster.host.described())
    throw ScenarioError("plan.offload_optimizer", "true",
                        "needs cluster.host (the PCIe link and CPU memory of the node: h2d_GBps, d2h_GBps, "
                        "memory_bandwidth_GBps, memory_GiB); the catalog's DGX A100, H100, H200 and B200 carry them");
  if (p.offload_device == OffloadDevice::nvme) require_nvme_offload_scope(s);
  // torchtitan's op-level policy, counted on its Llama layer (models/layer_ops.cpp apply_op_checkpointing)
  if (p.recompute == Recompute::selective_op && (m.mla || m.moe || !m.gated() || m.qk_norm || m.sandwich_norm))
    throw ScenarioError("plan.recompute", "selective_op",
                        "is counted for dense Llama-style layers (SwiGLU, grouped-query attention) only");
  if (p.offload_activations_layers > 0) {
    const std::string n = std::to_string(p.offload_activations_layers);
    const std::string key = "plan.offload_activations_layers";
    if (!s.cluster.host.described())
      throw ScenarioError(key, n, "needs cluster.host (the PCIe link and CPU memory of the node)");
    // Megatron-core's TransformerConfig refuses the same (megatron/core/transformer/transformer_config.py)
    if (p.offload_activations_layers >= m.layers)
      throw ScenarioError(key, n, "must be less than " + kv("model.layers", m.layers) +
                                      " (the last layer's backward comes right after its forward)");
    if (p.pp != 1) throw ScenarioError(key, n, "needs plan.pp: 1 (Megatron-core offloads no pipelined model)");
    if (p.recompute != Recompute::none)
      throw ScenarioError(key, n, "needs plan.recompute: none (offloading replaces recomputation)");
    // Megatron's one-stage schedule runs each micro-batch's forward and backward in turn
    // (forward_backward_no_pipelining): one micro-batch's layers are offloaded at a time
    if (p.schedule != Schedule::one_f_one_b) throw ScenarioError(key, n, "needs plan.schedule: 1f1b");
  }
  if (p.offload_params) {
    if (!p.shards_params() || !p.offload_optimizer)
      throw ScenarioError("plan.offload_params", "true",
                          "offloads ZeRO-3's parameter shard with its optimizer (ZeRO-Infinity): it needs plan.zero: 3 "
                          "and plan.offload_optimizer: true");
    if (p.dp_group_size() == 1)
      throw ScenarioError("plan.offload_params", "true",
                          "fetches each GPU's shard before ZeRO-3's per-layer all-gathers over the data-parallel "
                          "ranks (plan.dp x plan.cp), which a plan of one has none of (a GPU streaming its whole "
                          "model from CPU memory is not modelled)");
    if (!p.overlap_grad_reduce)
      throw ScenarioError("plan.offload_params", "true",
                          "fetches each layer's shard before its all-gather; with plan.overlap_grad_reduce: false the "
                          "stage moves as one bucket, which twinsim prices without offload: set it true");
    if (p.zero_hpz_partition_size > 1)
      throw ScenarioError("plan.offload_params", "true",
                          "keeps the parameters in CPU memory; plan.zero_hpz_partition_size keeps a second copy on "
                          "the GPUs: choose one");
  }
  for (const auto& [key, on] : {std::pair{"plan.zero_quantized_weights", p.zero_quantized_weights},
                                std::pair{"plan.zero_quantized_gradients", p.zero_quantized_gradients}})
    if (on && !p.shards_params())
      throw ScenarioError(key, "true", "quantises ZeRO-3's per-layer collectives (ZeRO++): it needs plan.zero: 3, not " +
                                           std::to_string(p.zero));
    else if (on && !p.overlap_grad_reduce)
      throw ScenarioError(key, "true", "quantises ZeRO-3's per-layer collectives (ZeRO++); with "
                                       "plan.overlap_grad_reduce: false the stage moves as one bucket, which twinsim "
                                       "prices unquantised: set it true");
  if (p.zero_hpz_partition_size > 1) validate_hpz(s);
  if (p.dp_replicate > 1) validate_dp_replicate(s);
  if (p.gradient_compression != GradCompression::none) {
    const std::string value(to_string(p.gradient_compression));
    if (p.shards_params())
      throw ScenarioError("plan.gradient_compression", value,
                          "compresses ZeRO 0-2's gradient reduction; with plan.zero: 3 use "
                          "plan.zero_quantized_gradients (ZeRO++ qgZ)");
    if (p.dp * p.cp == 1)
      throw ScenarioError("plan.gradient_compression", value,
                          "compresses the data-parallel gradient reduction; plan.dp=1 has none");
  }
  const std::int64_t per_step = t.micro_batch * p.dp;
  if (t.global_batch % per_step != 0)
    throw ScenarioError("training.global_batch", std::to_string(t.global_batch),
                        "is not a multiple of training.micro_batch*plan.dp=" + std::to_string(per_step));
  // Megatron's context parallelism splits the sequence into 2*cp chunks for load balance
  if (p.cp > 1 && t.seq_len % (2 * p.cp) != 0)
    throw ScenarioError("plan.cp", std::to_string(p.cp),
                        "needs training.seq_len to split into 2*cp=" + std::to_string(2 * p.cp) +
                            " equal chunks (Megatron's load-balanced context parallelism); " +
                            kv("training.seq_len", t.seq_len) + " does not");
  if (p.sequence_parallel) require_divides("plan.tp", p.tp, "training.seq_len", t.seq_len / p.cp);
  if (m.position == Position::learned && t.seq_len > m.max_seq_len)
    throw ScenarioError("training.seq_len", std::to_string(t.seq_len),
                        "exceeds the learned position table, " + kv("model.max_seq_len", m.max_seq_len));
  // Megatron's interleaved schedule needs whole rounds of pp micro-batches
  const std::int64_t micro_batches = t.global_batch / per_step;
  if (p.schedule == Schedule::interleaved && p.virtual_stages > 1 && micro_batches % p.pp != 0)
    throw ScenarioError("plan.schedule", "interleaved",
                        "needs the " + std::to_string(micro_batches) + " micro-batches per step to be a multiple of " +
                            kv("plan.pp", p.pp));
  if (p.schedule == Schedule::dualpipe) check_dualpipe(p, micro_batches);
  if (!s.cluster.gpu.has_peak(t.precision == Dtype::fp32 ? Dtype::fp32 : t.precision))
    throw ScenarioError("training.precision", std::string(to_string(t.precision)),
                        "is not supported by GPU " + s.cluster.gpu.name +
                            (is_fp4(t.precision) ? " (no fp4 tensor cores: Blackwell's, cluster.gpu.peak_tflops." +
                                                       std::string(to_string(t.precision)) + ")"
                                                 : " (no such math units)"));
  if (t.precision == Dtype::fp8 || is_fp4(t.precision)) require_own_gemm_curve(s.cluster.gpu, t.precision, "training.precision");
  require_attention_kernel_curves(s);
  require_hf_eager_scope(s);
  require_fused_linear_loss_scope(s);
  require_lora_scope(s);
  if (s.stack.fp8_params && t.precision != Dtype::fp8)
    throw ScenarioError("stack.fp8_params", "true", "keeps fp8 training's weights in fp8: it needs training.precision: fp8, not " +
                                                         std::string(to_string(t.precision)));
  if (s.stack.fp8_params && p.shards_params())
    throw ScenarioError("stack.fp8_params", "true", "with plan.zero: 3 is not modelled (ZeRO 0-2, the distributed optimizer)");
}

// inference.expert_weight_dtype: a MoE model's routed experts, in a format the GPU runs.
void validate_expert_weight_dtype(const Scenario& s) {
  const Dtype experts = *s.inference->expert_weight_dtype;
  const std::string value(to_string(experts));
  if (!s.model.moe)
    throw ScenarioError("inference.expert_weight_dtype", value, "applies to a model with routed experts (model.moe)");
  if (experts == Dtype::fp8 || is_fp4(experts))
    require_own_gemm_curve(s.cluster.gpu, experts, "inference.expert_weight_dtype");
  if (is_fp4(experts) && !s.cluster.gpu.has_peak(experts))
    throw ScenarioError("inference.expert_weight_dtype", value,
                        "is not supported by GPU " + s.cluster.gpu.name + " (no fp4 tensor cores)");
}

void validate_inference(const Scenario& s) {
  const InferenceWorkload& w = *s.inference;
  if (w.expert_weight_dtype) validate_expert_weight_dtype(s);
  // block scales are a format of fp8 weights (the linear layers' or the routed experts')
  if (w.fp8_block_scales && w.weight_dtype != Dtype::fp8 && w.experts_dtype() != Dtype::fp8)
    throw ScenarioError("inference.fp8_scaling", "block",
                        "needs fp8 weights (inference.weight_dtype or expert_weight_dtype)");
  require_prefill_attention_curves(s);
  if (s.plan.offload_optimizer)
    throw ScenarioError("plan.offload_optimizer", "true", "applies to training (an inference run has no optimizer)");
  if (s.plan.offload_activations_layers > 0)
    throw ScenarioError("plan.offload_activations_layers", std::to_string(s.plan.offload_activations_layers),
                        "applies to training (an inference run keeps nothing for a backward)");
  if (s.plan.offload_params) require_weight_offload_scope(s);
  if (s.plan.fp8_activation_input || s.plan.fp8_attention || s.plan.fp8_moe_act_cache)
    throw ScenarioError(s.plan.fp8_attention       ? "plan.fp8_attention"
                        : s.plan.fp8_moe_act_cache ? "plan.fp8_moe_act_cache"
                                                   : "plan.fp8_activation_input",
                        "true", "applies to training (what a forward keeps for its backward)");
  if (s.plan.offload_device != OffloadDevice::cpu && !s.plan.offload_params)
    throw ScenarioError("plan.offload_device", std::string(to_string(s.plan.offload_device)),
                        "places offloaded state: on inference it needs plan.offload_params: true (ZeRO-Inference)");
  if (s.plan.zero_hpz_partition_size > 1)
    throw ScenarioError("plan.zero_hpz_partition_size", std::to_string(s.plan.zero_hpz_partition_size),
                        "applies to training with ZeRO-3 (an inference run has no ZeRO collectives)");
  if (s.plan.dp_replicate > 1)
    throw ScenarioError("plan.dp_replicate", std::to_string(s.plan.dp_replicate),
                        "applies to training with ZeRO (an inference run has no ZeRO collectives)");
  if (s.plan.zero_quantized_weights || s.plan.zero_quantized_gradients)
    throw ScenarioError(s.plan.zero_quantized_weights ? "plan.zero_quantized_weights" : "plan.zero_quantized_gradients",
                        "true", "applies to training with ZeRO-3 (an inference run has no ZeRO collectives)");
  if (s.plan.gradient_compression != GradCompression::none)
    throw ScenarioError("plan.gradient_compression", std::string(to_string(s.plan.gradient_compression)),
                        "applies to training (an inference run reduces no gradients)");
  if (s.plan.zero != 0) throw ScenarioError("plan.zero", std::to_string(s.plan.zero), "applies to training only");
  if (optimizer_state_dtypes(s.plan).precision_aware()) {
    const auto [key, value] = precision_aware_key(s.plan);
    throw ScenarioError(key, value, "applies to training (an inference run has no optimizer)");
  }
  if (s.plan.recompute_modules != 0) throw ScenarioError("plan.recompute_modules", "", "applies to training only");
  if (s.plan.cp != 1) throw ScenarioError("plan.cp", std::to_string(s.plan.cp), "applies to training only");
  if (w.weight_dtype == Dtype::fp8 || is_fp4(w.weight_dtype))
    require_own_gemm_curve(s.cluster.gpu, w.weight_dtype, "inference.weight_dtype");
  if (is_fp4(w.weight_dtype) && !s.cluster.gpu.has_peak(w.weight_dtype))
    throw ScenarioError("inference.weight_dtype", std::string(to_string(w.weight_dtype)),
                        "is not supported by GPU " + s.cluster.gpu.name + " (no fp4 tensor cores: Blackwell's, cluster.gpu.peak_tflops." +
                            std::string(to_string(w.weight_dtype)) + ")");
  if (s.model.position == Position::learned && w.prompt_len + w.output_len > s.model.max_seq_len)
    throw ScenarioError("inference.prompt_len", std::to_string(w.prompt_len),
                        "plus inference.output_len=" + std::to_string(w.output_len) +
                            " exceeds the learned position table, " + kv("model.max_seq_len", s.model.max_seq_len));
  if (w.prefix_tokens >= w.prompt_len)
    throw ScenarioError("inference.prefix_tokens", std::to_string(w.prefix_tokens),
                        "must be less than " + kv("inference.prompt_len", w.prompt_len) +
                            " (the prefill computes at least the prompt's last token)");
  if (w.speculative) validate_speculative(s);
  if (w.disaggregation) validate_disaggregation(s);
}

// --- counts the models form from the scenario's sizes ---

struct Factor {
  const char* key;
  std::int64_t value;
};

// Counts past 2^53 are no longer exact in a double, and a byte count that large times the
// few dozen bytes per element and the copies the models keep leaves 64 bits: such a
// scenario is refused here, naming each key and value, not as an OverflowError from deep
// inside the work (seconds later, naming only two numbers).
void require_count_fits(const char* what, std::initializer_list<Factor> factors) {
  constexpr double kLargest = 9007199254740992.0;  // 2^53
  double product = 1;
  std::string named;
  for (const Factor& f : factors) {
    product *= static_cast<double>(f.value);
    named += (named.empty() ? "" : " x ") + kv(f.key, f.value);
  }
  if (product <= kLargest) return;
  char count[32];
  std::snprintf(count, sizeof count, "%.3g", product);
  throw ScenarioError(named, "", std::string("make ") + count + " " + what + ", more than 2^53 (9.0e15): too large to count exactly");
}

void validate_counts(const Scenario& s) {
  const ModelSpec& m = s.model;
  require_count_fits("embedding parameters", {{"model.vocab", m.vocab}, {"model.hidden", m.hidden}});
  require_count_fits("attention parameters", {{"model.layers", m.layers}, {"model.heads", m.heads},
                                               {"model.head_dim", m.head_dim}, {"model.hidden", m.hidden}});
  require_count_fits("FFN parameters", {{"model.layers", m.layers}, {"model.ffn_hidden", m.ffn_hidden},
                                         {"model.hidden", m.hidden}});
  if (m.moe)
    require_count_fits("expert parameters", {{"model.layers", m.layers}, {"model.moe.experts", m.moe->experts},
                                              {"model.moe.expert_ffn_hidden", m.moe->expert_ffn_hidden},
                                              {"model.hidden", m.hidden}});
  if (s.training) {
    const TrainingWorkload& t = *s.training;
    require_count_fits("tokens per step", {{"training.global_batch", t.global_batch}, {"training.seq_len", t.seq_len}});
    require_count_fits("activation values per layer and micro-batch",
                       {{"training.micro_batch", t.micro_batch}, {"training.seq_len", t.seq_len}, {"model.hidden", m.hidden}});
    require_count_fits("logits per micro-batch",
                       {{"training.micro_batch", t.micro_batch}, {"training.seq_len", t.seq_len}, {"model.vocab", m.vocab}});
  }
  if (s.inference) {
    const InferenceWorkload& w = *s.inference;
    require_count_fits("KV-cache values", {{"inference.batch", w.batch}, {"inference.prompt_len", w.prompt_len},
                                           {"model.layers", m.layers}, {"model.kv_heads", m.kv_heads},
                                           {"model.head_dim", m.head_dim}});
    require_count_fits("generated tokens' KV-cache values",
                       {{"inference.batch", w.batch}, {"inference.output_len", w.output_len},
                        {"model.layers", m.layers}, {"model.kv_heads", m.kv_heads}, {"model.head_dim", m.head_dim}});
    require_count_fits("prompt logits", {{"inference.batch", w.batch}, {"inference.prompt_len", w.prompt_len},
                                         {"model.vocab", m.vocab}});
  }
}

}  // namespace

void resolve_and_validate(Scenario& s) {
  validate_counts(s);
  resolve_world(s);
  validate_tensor_parallel(s.model, s.plan.tp, s.is_training(), "model", "plan.tp", s.plan.etp() == s.plan.tp);
  resolve_stages(s);
  validate_parallel_degrees(s);
  if (s.training) validate_training(s);
  if (s.inference) validate_inference(s);
}

}  // namespace twinsim
