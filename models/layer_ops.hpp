#pragma once
// The forward ops of ONE transformer layer on ONE GPU, already sharded by the plan's
// tensor (TP), sequence (SP) and context (CP) parallelism. This list is the shared
// foundation of the simulator: the memory model sums what each op saves for backward,
// and the training op graph instantiates it per layer and micro-batch and costs it.
//
// Conventions (the reference is Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models", §4 and Table 2):
//  * every op names the tensors it keeps for its backward pass in `saved`, under the
//    plan's recompute policy; a tensor shared by two ops is saved by one of them only
//    (e.g. with flash attention the attention output O is the input of attn.proj and
//    is counted there);
//  * dropout masks are 1 byte per element (Korthikanti §4.1);
//  * FLOPs count matrix multiplies only (2mnk), attention with the full s x s score
//    matrix (no causal halving), as Narayanan et al. 2021 Appendix and Korthikanti
//    Appendix A do; norms and element-wise ops are costed by their bytes;
//  * tensor-parallel collectives are entries of kind `collective` placed where
//    Megatron puts them (Shoeybi et al. 2019, Fig. 3 f/g operators; Korthikanti §4.2.2
//    for the sequence-parallel g/ḡ pair); their `bytes` is the size of the whole,
//    unsharded tensor the collective produces or consumes.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/dtype.hpp"
#include "models/lora.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

enum class OpKind { gemm, attention, elementwise, norm, collective };
enum class CollectiveKind { none, all_reduce, all_gather, reduce_scatter, all_to_all, ring_exchange };
// etp: the routed experts' own tensor-parallel group (plan.expert_tp)
enum class CommGroup { tp, cp, ep, etp };

struct Collective {
  CollectiveKind kind = CollectiveKind::none;
  CommGroup group = CommGroup::tp;
  std::int64_t bytes = 0;
};

struct SavedTensor {
  std::string_view name;  // e.g. "input", "softmax_out", "dropout_mask"
  std::int64_t bytes = 0;
};

// The memory-bound kernels an op list names (LayerOp::kernel): a calibrated device may
// give each its own efficiency (GpuSpec::kernel_efficiency), as CPU kernels differ 100x.
// ("zero": the grads' zeroing; "cast": the fp32 master weights copied into the model's 16-bit
// ones; "fp8_cast": an fp8 GEMM's 16-bit operand quantised to fp8, with its transpose;
// "grad_norm": gradient clipping's norm and scaling passes over the grads; "quantize":
// block quantisation: ZeRO++'s around its collectives, an fp4 GEMM's operand cast to
// nvfp4 / mxfp4 with its block scales); "dequantize": a quantised gradient exchange's
// dequantise-add of the packed blocks a rank receives (exec/train/quantized_exchange.hpp
// add_dequantized), where a device measured it apart (else priced as "quantize"); "finite_check": the reference
// executor's read of its gradient shard for NaN/Inf before each update (exec/train/trainer.cpp), priced where a
// calibrated host measured it (sim/training/step_graph.cpp finite_check_s)
// Each name once: the op lists, the step's own kernels and the calibration's benchmarks
// (calibrate/compute_bench.cpp, which measures what these price) use these constants.
namespace kernel_names {
inline constexpr std::string_view kLayerNorm = "layernorm", kRmsNorm = "rmsnorm", kGelu = "gelu", kSwiglu = "swiglu",
                                  kRope = "rope", kResidual = "residual", kEmbedding = "embedding",
                                  kCrossEntropy = "cross_entropy", kAdamw = "adamw", kSgd = "sgd", kZero = "zero",
                                  kCast = "cast", kFp8Cast = "fp8_cast", kGradNorm = "grad_norm",
                                  kQuantize = "quantize", kDequantize = "dequantize", kFiniteCheck = "finite_check";
}  // namespace kernel_names
inline constexpr std::array<std::string_view, 17> kKernelNames = {
    kernel_names::kLayerNorm,  kernel_names::kRmsNorm,  kernel_names::kGelu,      kernel_names::kSwiglu,
    kernel_names::kRope,       kernel_names::kResidual, kernel_names::kEmbedding, kernel_names::kCrossEntropy,
    kernel_names::kAdamw,      kernel_names::kSgd,      kernel_names::kZero,      kernel_names::kCast,
    kernel_names::kFp8Cast,    kernel_names::kGradNorm, kernel_names::kQuantize,  kernel_names::kDequantize,
    kernel_names::kFiniteCheck};
// The memory side of a GEMM's roofline, which a device's kernel_efficiency may also give:
// operands streamed from memory, or from the last-level cache (a pass whose weights and
// KV cache fit in it: GpuSpec::cache_bytes).
inline constexpr std::string_view kGemmKernel = "gemm";
inline constexpr std::string_view kGemmCachedKernel = "gemm_cached";
// A serving pass's attention over its KV cache (GpuSpec::kv_attention_efficiency).
inline constexpr std::string_view kKvCacheAttentionKernel = "kv_cache_attention";
// MLA's absorbed decode attention (DeepSeek-V2 §2.1.2): every query head over one shared
// latent row, K the whole row and V its first kv_lora_rank columns. Priced at its own
// kernel_efficiency where a device measured it (a CPU's per-byte rate falls with the heads
// a row serves), else as kv_cache_attention.
inline constexpr std::string_view kMlaDecodeAttentionKernel = "kv_cache_attention_mla";
// Whether `kernel` is a serving attention over a KV cache (either of the two above).
constexpr bool is_kv_cache_attention(std::string_view kernel) {
  return kernel == kKvCacheAttentionKernel || kernel == kMlaDecodeAttentionKernel;
}

struct LayerOp {
  std::string_view name;  // stable: "attn.qkv", "mlp.fc1", "moe.experts.down", ...
  OpKind kind = OpKind::elementwise;
  std::string_view kernel;  // norm and element-wise ops: one of kKernelNames
  // GEMM shape: `count` products C[m,n] = A[m,k] * B[k,n] (count > 1: grouped expert GEMMs)
  std::int64_t m = 0, n = 0, k = 0, count = 1;
  bool flash = false;       // attention: flash-style (scores never stored)
  std::int64_t head_dim = 0;  // attention: the width of one head (its efficiency depends on it)
  std::int64_t kv_len = 0;    // attention: the keys each query attends to (the sequence)
  // attention: the keys per query of one kernel call, which sets a flash kernel's rate:
  // kv_len, or under context parallelism one ring step's, kv_len / cp
  std::int64_t kernel_kv_len = 0;
  std::int64_t kv_items = 0;  // serving attention: (sequence, KV head) pairs whose caches it reads
  bool cuda_cores = false;    // serving decode attention whose math runs on the CUDA cores
  double prefix_flops = 0;    // serving attention: of fwd_flops, those run on an FA2-class kernel
  // serving attention: of fwd_flops, the prompt chunks' queries over their own keys (the
  // causal square, counted whole), and the chunk length (pair-weighted) that sets its rate
  double square_flops = 0;
  std::int64_t square_len = 0;
  std::int64_t heads = 0;   // serving attention: this GPU's query heads
  bool recomputed = false;  // forward runs again in backward under the recompute policy
  // of a recomputed op, the share of its forward that runs again (a fused GEMM of which the
  // policy recomputes some outputs: selective_op's K of QKV, up of gate/up)
  double recompute_share = 1;
  double fwd_flops = 0;
  double dgrad_flops = 0;   // backward: gradient with respect to the inputs
  double wgrad_flops = 0;   // backward: gradient with respect to the weights
  std::int64_t fwd_bytes = 0;     // HBM bytes read + written by the forward
  // element-wise ops: HBM bytes of the backward, where not about twice the forward's (0)
  std::int64_t bwd_bytes = 0;
  std::int64_t weight_bytes = 0;  // of fwd_bytes: the weights read
  std::vector<SavedTensor> saved;
  Collective fwd_comm;  // kind == collective only
  Collective bwd_comm;
  // The backward's second collective, in the same pass: with sequence parallelism a TP
  // region's entry keeps its input sharded and all-gathers it again for the weight gradient
  // (Korthikanti et al. 2022 §4.2.2; Megatron-core's LinearWithGradAccumulationAndAsync
  // Communication.backward, TE's LayerNormLinear), beside bwd_comm's reduce-scatter.
  Collective bwd_regather;
};

// One micro-batch as the layer sees it, before CP splits the sequence.
struct MicroBatchShape {
  std::int64_t micro_batch = 1;  // b: sequences
  std::int64_t seq_len = 2048;   // s: tokens per sequence
  Dtype dtype = Dtype::bf16;     // activations
  // fp8 / fp4 training: Transformer Engine keeps a low-precision GEMM's quantised input for its
  // backward, not the 16-bit tensor (te.Linear / GroupedLinear / LayerNormLinear save the copy
  // they cast; "Using FP8 with Transformer Engine"): fp8 1 byte an element; nvfp4 / mxfp4 the
  // columnwise copy the wgrad reads, 4 bits and its block scales (scaled_bytes)
  std::optional<Dtype> quantized_gemm_inputs = std::nullopt;
  // LoRA fine-tuning (training.lora): the frozen layers keep no input for a weight gradient,
  // the adapters keep their low-rank activations (build_layer_ops)
  std::optional<LoraSpec> lora = std::nullopt;
  // Megatron-core >= 0.13 (Megatron-LM !2668, "Memory efficient token permutation"): the
  // router's probabilities travel with the tokens and weight the experts' activation
  // (experts.py weighted_bias_swiglu_impl), so the unpermute no longer keeps the experts'
  // output rows for the probabilities' gradient; the activation keeps the fp32 probabilities
  bool moe_probs_in_activation = false;
  // fp8 / fp4 training, Megatron-core's TEGroupedMLP (experts.py, quantization_padding and
  // quantization_unpadding: Transformer Engine's Fp8Padding / Fp8Unpadding, fp8_padding.py,
  // one fused row copy each way): each local expert's rows padded to the quantization's
  // alignment (16 rows, MXFP8 32) before the expert GEMMs and the output unpadded after,
  // a copy whenever a count is not already aligned; with dropless routing, each micro-batch.
  // Not where the router pads the routing map (moe_router_padding_for_quantization) or the
  // dispatcher pads in its permute (HybridEP's pad_multiple): the counts arrive aligned.
  bool moe_padding_copies = false;
};

// The forward ops of transformer layer `layer` (0-based) on one GPU.
std::vector<LayerOp> build_layer_ops(const ModelSpec& model, std::int64_t layer, const Plan& plan,
                                     const MicroBatchShape& shape);

// Entering a TP region (the layer's attention and MLP, the head): Megatron's f (identity,
// all-reduce in backward) or with sequence parallelism g (all-gather, reduce-scatter in
// backward, and the input re-gathered for the weight gradient) (Korthikanti §4.2.2, Fig. 5).
// `bytes`: the whole activation; `saved_input_bytes`: the whole input as the GEMM keeps it.
LayerOp tp_region_entry(std::string_view name, bool sequence_parallel, std::int64_t bytes,
                        std::int64_t saved_input_bytes);

// Bytes all ops keep for backward (one layer, one micro-batch).
std::int64_t saved_bytes(const std::vector<LayerOp>& ops);
double forward_flops(const std::vector<LayerOp>& ops);
double backward_flops(const std::vector<LayerOp>& ops);

// Query/key/value heads one GPU holds: heads split over TP; K/V heads too, but at
// least one per GPU (replicated when kv_heads < tp, as vLLM and Megatron do for GQA).
std::int64_t heads_per_gpu(const ModelSpec& model, int tp);
std::int64_t kv_heads_per_gpu(const ModelSpec& model, int tp);
// Columns of K and V together that one GPU's attention reads per token: 2 x kv heads x
// head_dim, or with MLA every local head's rebuilt K (nope + rope) and V.
std::int64_t attention_kv_columns(const ModelSpec& model, int tp);
// "layernorm" or "rmsnorm": the kernel of the model's norm ops.
std::string_view norm_kernel_name(const ModelSpec& model);

}  // namespace twinsim
