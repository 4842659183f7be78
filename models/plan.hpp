#pragma once
// How a model is split over GPUs: the `plan` section of a scenario (SCENARIO.md).
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/dtype.hpp"

namespace twinsim {

// selective: Megatron's (the attention core's scores, Korthikanti et al. 2022 §4.2.3);
// selective_op: PyTorch's op-level selective checkpointing as torchtitan's "op" policy runs
// it (parallelize_llama.py _apply_ac_to_transformer_block: every matmul's output saved but
// every second one, and the attention's; all else recomputed; models/layer_ops.cpp).
enum class Recompute { none, selective, full, selective_op };
// Megatron-core's --recompute-modules (with --recompute-granularity selective; its default
// [core_attn] is plan.recompute: selective alone): the submodules whose outputs the forward
// discards and the backward recomputes (megatron/core/transformer/transformer_config.py,
// recompute_modules; Megatron-core MoE README, "Checkpointing"). moe and shared_experts are
// Megatron's too, refused as not modelled (scenario/validate.cpp).
enum class RecomputeModule { core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts };
enum class Schedule { gpipe, one_f_one_b, interleaved, dualpipe };
// Data-parallel gradient compression (ZeRO 0-2): block-quantised int8 or int4 on the wire,
// or the largest gradient_topk_ratio of the values with their indices (top-k sparsification,
// Aji & Heafield 2017; Lin et al. 2018), or each weight matrix as its rank-r factors
// (PowerSGD, Vogels et al. 2019), all with error feedback (Seide et al. 2014; Karimireddy et
// al. 2019), priced in sim/training/zero_comm.
enum class GradCompression { none, int8, int4, topk, powersgd };
// Where offloaded training state lives (DeepSpeed's offload_optimizer / offload_param
// `device`): CPU memory (ZeRO-Offload), or the node's NVMe drives with CPU memory as a
// staging buffer (ZeRO-Infinity, Rajbhandari et al. 2021 §5-6), priced in
// sim/memory/weights.cpp (bytes) and sim/training/nvme_offload (time)
enum class OffloadDevice { cpu, nvme };

// Every knob of the plan but the per-stage layer list: plain data, so the search walks
// millions of them without allocating and sends them between processes as bytes. Each
// knob's key, default and range: models/plan_fields.hpp.
struct PlanKnobs {
  int tp = 1;
  int pp = 1;
  int dp = 1;  // after loading, always resolved (the scenario may leave it out)
  int cp = 1;
  int ep = 1;
  // The routed experts' own tensor parallelism (Megatron-core's expert_tensor_parallel_size,
  // --expert-tensor-parallel-size); 0: the attention's, plan.tp (Megatron's default). With
  // MoE parallel folding the experts' EP x ETP groups are laid over the stage's tp x cp x dp
  // ranks on their own (Liu et al. 2025, arXiv:2504.14960; parallel_state's expert
  // RankGenerator, order tp-ep-dp-pp): read it through etp()
  int expert_tp = 0;
  bool sequence_parallel = false;
  int zero = 0;
  Recompute recompute = Recompute::none;
  // plan.recompute_modules: a bit per RecomputeModule; 0: Megatron's default, core_attn alone
  std::uint32_t recompute_modules = 0;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  // Megatron-core's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split
  // (TransformerConfig; get_num_layers_to_build): the embedding (the loss) counts as one layer
  // of the split, so the first virtual stage of stage 0 (the last of the last stage) builds one
  // transformer layer fewer, none when the split leaves one layer a virtual stage (Llama 3.1
  // 405B's 126 layers + 2 on 16 x 8 virtual stages, Megatron-Bridge's GB200 recipes)
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  // The most gradients one overlapped data-parallel reduction call carries (Megatron-core's
  // DistributedDataParallelConfig.bucket_size, --ddp-bucket-size); 0: Megatron's default,
  // dp_bucket_params below
  int dp_bucket_size = 0;
  bool tp_comm_overlap = false;
  // Megatron-core's EP all-to-all overlap ("combined 1F1B", --overlap-moe-expert-parallel-comm;
  // Megatron-Bridge's moe_a2a_overlap): in the 1F1B steady state one micro-batch's forward and
  // another's backward run layer by layer together, each one's dispatch and combine all-to-alls
  // beside the other's compute (sim/training/ep_overlap.hpp)
  bool moe_a2a_overlap = false;
  // --delay-wgrad-compute: under that overlap the weight gradients run apart from the input
  // gradients, the experts' beside the backward's dispatch, the attention's beside the next
  // layer's combine
  bool delay_wgrad_compute = false;
  // Megatron-core's precision-aware optimizer (--use-precision-aware-optimizer with
  // --exp-avg-dtype, --exp-avg-sq-dtype, --main-params-dtype; optimizer_config.py, TE's
  // FusedAdam runs the update): the types Adam keeps its moments and master weights in. All
  // fp32: the plain optimizer (models/optimizer_state.hpp OptimizerStateDtypes)
  Dtype exp_avg_dtype = Dtype::fp32;
  Dtype exp_avg_sq_dtype = Dtype::fp32;
  Dtype main_params_dtype = Dtype::fp32;
  // flash-style attention never stores the s x s scores (Dao et al. 2022); an
  // extension of SCENARIO.md, default on as in current Megatron-core/TE runs
  bool flash_attention = true;
  // Megatron-core's activation_func_fp8_input_store (NeMo's FP8_ACT): the SwiGLU keeps its input,
  // the up GEMM's gate and up outputs, in fp8 (a plain cast, 1 byte) for its backward, which casts
  // it back (megatron/core/fusions/fused_bias_swiglu.py, SwiGLUFunction; 25.04-alpha.rc1)
  bool fp8_activation_input = false;
  // Megatron-core's fp8_dot_product_attention (NeMo's FP8_DPA, with NVTE_FP8_DPA_BWD=1): Transformer
  // Engine's cuDNN fp8 attention keeps fp8 Q, K, V and O and two fp32 softmax statistics a row
  // (M, ZInv) for its backward, not the 16-bit Q, K, V and O (FusedAttnFunc, TE v2.2)
  bool fp8_attention = false;
  // DeepSeek-V3's fp8-cached MoE activation (arXiv 2412.19437 §3.3.2, "Low-Precision Activation" (2)):
  // the SwiGLU of the MoE (routed and shared experts) keeps its input, the gate and up GEMM outputs, in
  // fp8 with 1x128 tile scales for its backward and recomputes its output there (models/layer_ops.cpp
  // apply_fp8_moe_act_cache); needs moe_act recomputation and a stack that can (StackSpec::fp8_cached_moe_act)
  bool fp8_moe_act_cache = false;
  // ZeRO-Offload (Ren et al. 2021): Adam's fp32 weights and moments live in CPU memory and
  // the CPU runs the update; the GPU sends its gradient shard and gets the 16-bit weights back
  bool offload_optimizer = false;
  // ZeRO-Infinity's parameter offload (Rajbhandari et al. 2021, DeepSpeed offload_param to
  // cpu; PyTorch FSDP's CPUOffload(offload_params=True)): with ZeRO-3 and offload_optimizer,
  // each GPU's 16-bit parameter shard lives in CPU memory and crosses PCIe before every
  // per-layer all-gather; the CPU's update writes it in place (no copy back)
  bool offload_params = false;
  // Where offload_optimizer's states and offload_params' shard live: cpu (default), or nvme
  // (ZeRO-Infinity; DeepSpeed allows it with ZeRO-3 only): the update reads each sub-group's
  // states from the drives into CPU buffers and writes them back, and a parameter fetch reads
  // the shard from the drives before crossing PCIe
  OffloadDevice offload_device = OffloadDevice::cpu;
  // Activation offload (Transformer Engine's get_cpu_offload_context; Megatron-core's
  // --cpu-offloading-num-layers N with activations only): what the first N transformer layers
  // keep for their backward goes to CPU memory during the forward, each layer's copy beside
  // the next layer's forward, and comes back one layer ahead in the backward. 0: none
  int offload_activations_layers = 0;
  // ZeRO++ (Wang et al. 2023; DeepSpeed's zero_quantized_weights / zero_quantized_gradients):
  // ZeRO-3's per-layer parameter all-gathers in block-quantised int8 (qwZ) and its gradient
  // reduce-scatters in block-quantised int4 (qgZ), priced in sim/training/zero_comm
  bool zero_quantized_weights = false;
  bool zero_quantized_gradients = false;
  // ZeRO++ hpZ (DeepSpeed's zero_hpz_partition_size): each node keeps a second, 16-bit copy
  // of the parameters sharded over this many of its GPUs, so the backward's all-gathers stay
  // inside the node. 1: none
  int zero_hpz_partition_size = 1;
  // Hybrid sharding (HSDP): the data-parallel ranks split into dp_replicate groups of
  // dp/dp_replicate consecutive ones (each with its cp ranks); ZeRO shards over one group and
  // the groups hold replicas. torchtitan's data_parallel_replicate_degree (FSDP2 over a 2-D
  // DeviceMesh, replicate outer), FSDP1's HYBRID_SHARD, Megatron-core's
  // --num-distributed-optimizer-instances with ZeRO-1. 1: none
  int dp_replicate = 1;
  // The gradient reduction of ZeRO 0-2 (buckets, and ZeRO-2's per-layer reduce-scatters)
  // compressed to int8 or int4 with an fp32 error-feedback residual per gradient value
  // (ZeRO-3 has ZeRO++'s qgZ instead)
  GradCompression gradient_compression = GradCompression::none;
  double gradient_topk_ratio = 0.01;  // topk: the share of values sent (Lin et al. 2018 keep 0.1%)
  // powersgd: the rank r of each matrix's factors (PyTorch's matrix_approximation_rank,
  // default 1; Vogels et al. 2019 train with 1 to 4)
  int gradient_powersgd_rank = 1;

  std::int64_t world_size() const {
    return static_cast<std::int64_t>(tp) * pp * cp * dp;
  }
  // The ranks that hold the same parameters and reduce their gradients together: the data-
  // parallel replicas and, within each, the context-parallel ranks, which see other parts
  // of the same sequences (Megatron-core's data-parallel group with context parallelism,
  // parallel_state.get_data_parallel_group(with_context_parallel=True), which its DDP and
  // distributed optimizer use). ZeRO shards over it.
  std::int64_t dp_group_size() const { return static_cast<std::int64_t>(dp) * cp; }
  // The ranks ZeRO shards over: the data-parallel group, or one of its dp_replicate shard
  // groups under hybrid sharding (the shard group, torchtitan's dp_shard x cp).
  std::int64_t zero_shard_group_size() const { return dp_group_size() / std::max(1, dp_replicate); }
  // Whether selective recomputation discards `module`'s outputs and recomputes them in the
  // backward (full recomputation recomputes everything: asked apart).
  bool recomputes(RecomputeModule module) const {
    if (recompute != Recompute::selective) return false;
    if (recompute_modules == 0) return module == RecomputeModule::core_attn;
    return (recompute_modules >> static_cast<int>(module)) & 1u;
  }
  // The routed experts' tensor-parallel degree: plan.expert_tp, or plan.tp where it is 0.
  int etp() const { return expert_tp > 0 ? expert_tp : tp; }
  // ... and for the routed experts, which EP x ETP splits over the stage's tp x cp x dp ranks:
  // the ranks that hold the same experts (Megatron-core's expert-data-parallel group,
  // parallel_state: world / (etp x ep x pp); dp x cp / ep where etp = tp).
  std::int64_t expert_dp_group_size() const {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(tp) * dp_group_size() / (static_cast<std::int64_t>(ep) * etp()));
  }
  // What ZeRO's stage splits over the data-parallel ranks (Rajbhandari et al. 2020, §5):
  // stage 1 the optimizer states, 2 also the gradients, 3 also the parameters.
  bool shards_optimizer() const { return zero >= 1; }
  bool shards_grads() const { return zero >= 2; }
  bool shards_params() const { return zero >= 3; }
};

struct Plan : PlanKnobs {
  std::vector<int> stage_layers;  // resolved: always pp entries after loading
};

// Each choice knob's values, in the order scenario files list them (names: to_string).
inline constexpr Recompute kRecomputePolicies[] = {Recompute::none, Recompute::selective, Recompute::full,
                                                   Recompute::selective_op};
inline constexpr RecomputeModule kRecomputeModules[] = {
    RecomputeModule::core_attn, RecomputeModule::moe_act, RecomputeModule::layernorm,     RecomputeModule::mla_up_proj,
    RecomputeModule::mlp,       RecomputeModule::moe,     RecomputeModule::shared_experts};
inline constexpr Schedule kSchedules[] = {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved,
                                          Schedule::dualpipe};
inline constexpr GradCompression kGradCompressions[] = {GradCompression::none, GradCompression::int8,
                                                        GradCompression::int4, GradCompression::topk,
                                                        GradCompression::powersgd};
inline constexpr OffloadDevice kOffloadDevices[] = {OffloadDevice::cpu, OffloadDevice::nvme};
// Megatron's --exp-avg-dtype / --exp-avg-sq-dtype and --main-params-dtype choices (arguments.py)
inline constexpr Dtype kMomentDtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16, Dtype::fp8};
inline constexpr Dtype kMainParamsDtypes[] = {Dtype::fp32, Dtype::fp16};

// Ranks of the data-parallel group (dp_group_size) one node of `gpus_per_node` holds: they
// lie tp apart (Megatron's rank order tp-cp-ep-dp-pp, sim/training/rank_layout.hpp).
std::int64_t dp_ranks_per_node(const PlanKnobs& plan, int gpus_per_node);
// The data-parallel gradient bucket in parameters: plan.dp_bucket_size, or Megatron-core's
// default max(40M, 1M x dp*cp) (megatron/core/distributed/distributed_data_parallel_config.py,
// bucket_size). The simulator's buckets and the executor's (exec/train/zero.cpp) both.
std::int64_t dp_bucket_params(const PlanKnobs& plan);
// ZeRO++ hpZ's secondary partition size where it applies: ZeRO-3 with per-layer gathers
// (overlap_grad_reduce) and a size dividing the node's DP ranks; else 1 (none).
int hpz_partition(const PlanKnobs& plan, int gpus_per_node);

std::string_view to_string(Recompute r);
std::string_view to_string(Schedule s);
std::string_view to_string(RecomputeModule m);  // Megatron's spelling: "moe_act"
std::string_view to_string(GradCompression c);
// (a knob's enum names itself here: the reader and `--set` find its values through this)
inline std::string_view to_string(OffloadDevice d) { return d == OffloadDevice::nvme ? "nvme" : "cpu"; }
bool parse_recompute(std::string_view name, Recompute& out);
bool parse_schedule(std::string_view name, Schedule& out);
bool parse_grad_compression(std::string_view name, GradCompression& out);

}  // namespace twinsim
