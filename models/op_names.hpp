#pragma once
// The names of the ops of a step, one home for every side that must agree on them: the op
// lists the simulator prices (models/layer_ops, models/head_ops, sim/inference/iteration_ops),
// the executor's profiled ops (exec/model, "layer3.attn.qkv.fwd" = layer prefix + name +
// pass), the report's time.ops and the comparison that pairs predicted and measured ops.
// A name that drifts on one side no longer compiles instead of surfacing only in an
// end-to-end comparison.
#include <string>
#include <string_view>

namespace twinsim::op_names {

inline constexpr const char* kAttnCore = "attn.core";
inline constexpr const char* kAttnCpRing = "attn.cp_ring";
// PyTorch's ring attention's own memory passes around its per-step SDPA calls (stack.cp_exchange:
// torch_all_gather; the simulator's name, sim/training/torch_cp_exchange.hpp)
inline constexpr const char* kAttnCpMerge = "attn.cp_merge";
// PyTorch's fused matmul-reduce-scatter's sum over its stacked partials (stack.tp_overlap:
// symmetric_memory; the simulator's name, sim/training/async_tp.hpp FusedMatmulSplit)
inline constexpr const char* kTpPartialsSum = "tp.partials_sum";
// PyTorch's fused all-gather-matmul's copy of the local shard into its symmetric-memory buffer
// before the first chunk (stack.tp_overlap: symmetric_memory; sim/training/async_tp.hpp)
inline constexpr const char* kTpShardStaging = "tp.shard_staging";
inline constexpr const char* kAttnNorm = "attn.norm";
inline constexpr const char* kAttnProj = "attn.proj";
inline constexpr const char* kAttnQkv = "attn.qkv";
inline constexpr const char* kAttnResidual = "attn.residual";
inline constexpr const char* kAttnRope = "attn.rope";
inline constexpr const char* kAttnTpEnter = "attn.tp_enter";
inline constexpr const char* kAttnTpExit = "attn.tp_exit";
inline constexpr const char* kAttnQkNorm = "attn.qk_norm";      // QK-norm (Qwen3, Gemma 3)
inline constexpr const char* kAttnPostNorm = "attn.post_norm";  // sandwich norm (Gemma 2/3)
// multi-head latent attention (DeepSeek-V2/V3)
inline constexpr const char* kAttnQ = "attn.q";                  // Q without a bottleneck
inline constexpr const char* kAttnQDown = "attn.q_down";
inline constexpr const char* kAttnQNorm = "attn.q_norm";
inline constexpr const char* kAttnQUp = "attn.q_up";
inline constexpr const char* kAttnKvDown = "attn.kv_down";
inline constexpr const char* kAttnKvNorm = "attn.kv_norm";
inline constexpr const char* kAttnKvUp = "attn.kv_up";

inline constexpr const char* kEmbeddingLookup = "embedding.lookup";
inline constexpr const char* kEmbeddingPosition = "embedding.position";
inline constexpr const char* kEmbeddingReduce = "embedding.reduce";
inline constexpr const char* kEmbeddingWord = "embedding.word";

inline constexpr const char* kHeadEnter = "head.enter";
inline constexpr const char* kHeadGather = "head.gather";
inline constexpr const char* kHeadLogits = "head.logits";
inline constexpr const char* kHeadLoss = "head.loss";
inline constexpr const char* kHeadLossReduce = "head.loss_reduce";
inline constexpr const char* kHeadNorm = "head.norm";
inline constexpr const char* kHeadOutput = "head.output";
inline constexpr const char* kHeadSample = "head.sample";

inline constexpr const char* kMlpAct = "mlp.act";
inline constexpr const char* kMlpActClamp = "mlp.act_clamp";
inline constexpr const char* kMlpDown = "mlp.down";
inline constexpr const char* kMlpFc1 = "mlp.fc1";
inline constexpr const char* kMlpFc2 = "mlp.fc2";
inline constexpr const char* kMlpGateUp = "mlp.gate_up";
inline constexpr const char* kMlpNorm = "mlp.norm";
inline constexpr const char* kMlpPostNorm = "mlp.post_norm";  // sandwich norm (Gemma 2/3)
inline constexpr const char* kMlpResidual = "mlp.residual";
inline constexpr const char* kMlpTpEnter = "mlp.tp_enter";
inline constexpr const char* kMlpTpExit = "mlp.tp_exit";

inline constexpr const char* kMoeCombine = "moe.combine";
// the per-expert row counts exchanged over EP before the dispatch moves the rows (forward only)
inline constexpr const char* kMoeCounts = "moe.counts";
inline constexpr const char* kMoeDispatch = "moe.dispatch";
// Megatron-core's alltoall dispatcher with expert tensor parallelism: the dispatched tokens
// all-gathered over the experts' TP group, and the experts' partial outputs reduce-scattered
inline constexpr const char* kMoeEtpGather = "moe.etp_gather";
inline constexpr const char* kMoeEtpScatter = "moe.etp_scatter";
inline constexpr const char* kMoeExperts = "moe.experts";
inline constexpr const char* kMoeExpertsAct = "moe.experts.act";
// the gated activation's inputs clamped, as their own passes (ModelSpec::activation_clamp)
inline constexpr const char* kMoeExpertsActClamp = "moe.experts.act_clamp";
inline constexpr const char* kMoeExpertsDown = "moe.experts.down";
// the routed experts' output bias, weighted by the router probability, added outside the GEMM
inline constexpr const char* kMoeExpertsBias = "moe.experts.bias";
inline constexpr const char* kMoeExpertsFc1 = "moe.experts.fc1";
inline constexpr const char* kMoeExpertsFc2 = "moe.experts.fc2";
inline constexpr const char* kMoeExpertsGateUp = "moe.experts.gate_up";
// fp8 / fp4 expert GEMMs: each expert's rows copied out padded to the quantization's alignment
// before them, and the output copied back unpadded after (Transformer Engine's Fp8Padding /
// Fp8Unpadding in Megatron-core's TEGroupedMLP)
inline constexpr const char* kMoeExpertsPad = "moe.experts.pad";
inline constexpr const char* kMoeExpertsUnpad = "moe.experts.unpad";
// the dispatcher's token moves around the experts: routed copies of each token out in
// expert order, the received chunks regrouped by local expert and back, the copies summed in
inline constexpr const char* kMoePermute = "moe.permute";
inline constexpr const char* kMoeSortChunks = "moe.sort_chunks";
inline constexpr const char* kMoeUnsortChunks = "moe.unsort_chunks";
inline constexpr const char* kMoeUnpermute = "moe.unpermute";
inline constexpr const char* kMoeRouter = "moe.router";
inline constexpr const char* kMoeShared = "moe.shared";
inline constexpr const char* kMoeSharedAct = "moe.shared.act";
inline constexpr const char* kMoeSharedActClamp = "moe.shared.act_clamp";
inline constexpr const char* kMoeSharedDown = "moe.shared.down";
inline constexpr const char* kMoeSharedFc1 = "moe.shared.fc1";
inline constexpr const char* kMoeSharedFc2 = "moe.shared.fc2";
inline constexpr const char* kMoeSharedGateUp = "moe.shared.gate_up";

// DeepSeek-V3's multi-token-prediction module (§2.2): its norms and projection, its
// transformer block's ops under the "mtp." prefix (head_ops.cpp), its logits and loss.
inline constexpr const char* kMtpNorm = "mtp.norm";
inline constexpr const char* kMtpProj = "mtp.proj";
inline constexpr const char* kMtpLogits = "mtp.logits";
inline constexpr const char* kMtpLoss = "mtp.loss";
inline constexpr const char* kMtpPrefix = "mtp.";

// Step-level ops outside the layers: data-parallel gradient reduction and ZeRO parameter
// gathers, the optimizer, pipeline transfers (the executor's profiled names, the
// simulator's tasks and report ops, the comparison's pairing).
inline constexpr const char* kDpGradReduce = "dp.grad_reduce";
inline constexpr const char* kDpParamGather = "dp.param_gather";
// FSDP2's copies on the compute stream around a layer's gather and reduce-scatter
// (stack.fsdp_copies; the simulator's name, inside each layer's passes)
inline constexpr const char* kDpFsdpCopies = "dp.fsdp_copies";
inline constexpr const char* kOptimizerStep = "optimizer.step";
inline constexpr const char* kOptimizerZeroGrad = "optimizer.zero_grad";
// ZeRO-Offload's copies inside optimizer.step: the reduced gradients to the host, the
// updated weights back (the executor's names; the simulator prices them in optimizer.step)
inline constexpr const char* kOffloadGradsToHost = "offload.grads_d2h";
inline constexpr const char* kOffloadParamsToGpu = "offload.params_h2d";
// plan.offload_device: nvme: the optimizer's states read from the rank's swap file before the
// update and written back after it (inside optimizer.step)
inline constexpr const char* kOffloadNvmeRead = "offload.nvme_read";
inline constexpr const char* kOffloadNvmeWrite = "offload.nvme_write";
// activation offload (plan.offload_activations_layers): a layer's saved tensors out and back
inline constexpr const char* kOffloadActivationsToHost = "offload.activations_d2h";
inline constexpr const char* kOffloadActivationsToGpu = "offload.activations_h2d";
inline constexpr const char* kPpSend = "pp.send";
inline constexpr const char* kPpRecv = "pp.recv";
inline constexpr const char* kPpSendRecv = "pp.send_recv";

// The three ops of an FFN, by whose FFN it is and whether it is gated (SwiGLU/GeGLU:
// gate and up in one op) or not (GeLU: fc1, fc2).
enum class Ffn { dense, routed_experts, shared_experts };
struct FfnOpNames {
  const char *up, *act, *down;
  const char* clamp;  // the activation's inputs clamped first (ModelSpec::activation_clamp)
};
constexpr FfnOpNames ffn_op_names(Ffn ffn, bool gated) {
  switch (ffn) {
    case Ffn::routed_experts:
      return gated ? FfnOpNames{kMoeExpertsGateUp, kMoeExpertsAct, kMoeExpertsDown, kMoeExpertsActClamp}
                   : FfnOpNames{kMoeExpertsFc1, kMoeExpertsAct, kMoeExpertsFc2, kMoeExpertsActClamp};
    case Ffn::shared_experts:
      return gated ? FfnOpNames{kMoeSharedGateUp, kMoeSharedAct, kMoeSharedDown, kMoeSharedActClamp}
                   : FfnOpNames{kMoeSharedFc1, kMoeSharedAct, kMoeSharedFc2, kMoeSharedActClamp};
    default:
      return gated ? FfnOpNames{kMlpGateUp, kMlpAct, kMlpDown, kMlpActClamp}
                   : FfnOpNames{kMlpFc1, kMlpAct, kMlpFc2, kMlpActClamp};
  }
}

// An op's full name: "layer<N>." for an op of layer N, the op's name, and its pass
// ("layer3.attn.qkv.fwd"; "head.logits.bwd_dgrad" outside the layers). The executor times
// its ops under it (exec/model/model_context), the simulator reports its op table under it
// (sim/training/training_report, sim/inference/iteration_cost) and the comparison pairs
// the two by it (compare/op_times, which strips the layer prefix).
enum class OpPass { fwd, bwd_dgrad, bwd_wgrad, recompute };

constexpr std::string_view pass_name(OpPass p) {
  switch (p) {
    case OpPass::bwd_dgrad: return "bwd_dgrad";
    case OpPass::bwd_wgrad: return "bwd_wgrad";
    case OpPass::recompute: return "recompute";
    default: return "fwd";
  }
}

inline constexpr std::string_view kLayerPrefix = "layer";  // "layer" + N + "."

inline std::string layer_prefix(int layer) { return std::string(kLayerPrefix) + std::to_string(layer) + "."; }

// layer < 0: an op outside the layers (embedding, head, optimizer)
inline std::string op_name(int layer, std::string_view op, OpPass pass) {
  std::string name = layer >= 0 ? layer_prefix(layer) : std::string();
  name += op;
  name += '.';
  name += pass_name(pass);
  return name;
}

}  // namespace twinsim::op_names
