#pragma once
// One GPU's public figures (datasheets) and the efficiencies the cost model applies.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/kernel_generation.hpp"
#include "models/dtype.hpp"

namespace twinsim {

// A point of an efficiency curve: at `size` (a GEMM's FLOPs, or a message's bytes)
// the achieved fraction of peak is `efficiency`. Curves interpolate linearly in
// log(size) between points and hold the end values beyond them.
struct EfficiencyPoint {
  double size = 0;
  double efficiency = 1;
};

// A kernel's forward and backward efficiency curves (each may be empty: not measured).
struct PassCurves {
  std::vector<EfficiencyPoint> fwd, bwd;
  bool empty() const { return fwd.empty() && bwd.empty(); }
  // The curve of one pass; a kernel measured in one direction only is taken to run alike in the other.
  const std::vector<EfficiencyPoint>& of(bool backward) const {
    const auto& own = backward ? bwd : fwd;
    return own.empty() ? (backward ? fwd : bwd) : own;
  }
};

// A linear layer's three GEMMs: forward Y = X W^T, dgrad dX = dY W, wgrad dW = dY^T X.
enum class GemmPass { fwd, dgrad, wgrad };

// How a GPU's power limit slows its GEMMs when they fill the time (sim/cost/power_limit.hpp):
// the GEMM curves are a cool GPU's rates, and the clock falls as the tensor cores' share of
// a stretch of work grows. Fitted to a duty-cycle sweep (scripts/duty_cycle_to_catalog.py).
struct PowerLimitedGemm {
  double memory_bound_load = 0;  // a memory-bound kernel's draw on the limit, against a GEMM's
  double knee_load = 1;          // the load up to which the clock holds
  double slope = 0;              // the clock's fall per unit of load above the knee
  // The board power limit the sweep ran under (W; 0: not said, the figures hold at any
  // limit). A GPU set to another limit (GpuSpec::power_limit_W) scales them
  // (sim/cost/power_limit.hpp clock_figures_at).
  double measured_at_W = 0;
};

// A decode step's attention over its KV cache is not only its bytes: the kernel takes a
// fixed time a call beyond its launch, and works through the batch (sequence, KV head) by
// (sequence, KV head), so a batch of short caches is bound by its count of such items
// rather than by HBM (one H100: 64 sequences x 32 heads of 128 cached tokens read at 0.72
// of the bandwidth, 8 x 32 of 1,024 at 0.86; scripts/decode_attention_to_catalog.py).
// Zeros: not measured, the bytes alone.
struct KvAttentionLatency {
  double call_s = 0;  // a call's fixed time, beyond kernel_launch_us
  double item_s = 0;  // the least time a (sequence, KV head) item adds
};

struct GpuSpec {
  std::string name;
  std::int64_t memory_bytes = 0;        // HBM capacity
  double hbm_bandwidth_Bps = 0;         // peak HBM bandwidth
  std::map<Dtype, double> peak_flops;   // dense (no sparsity) peak per math type
  double nvlink_bandwidth_Bps = 0;      // per GPU, one direction
  double kernel_launch_s = 0;           // fixed cost of one kernel
  // The least one expert's GEMM of a grouped call takes (one GEMM per expert, as Transformer
  // Engine's GroupedLinear and grouped_gemm's cuBLAS path run them on Hopper): measured, the
  // per-expert overhead of issue and small-kernel ramp; 0: none (ComputeOp::groups).
  double grouped_gemm_expert_floor_s = 0;
  // A fused grouped GEMM (one kernel runs every expert's tiles: vLLM's and SGLang's fused_moe,
  // DeepGEMM's grouped layouts, TensorRT-LLM's MoE GEMM; ComputeOp::fused_groups): the fraction
  // of the math type's dense peak one expert's GEMM reaches, by its rows (tokens routed to
  // it); measured. Empty: such a call is priced as one tall GEMM of all the experts' rows.
  std::vector<EfficiencyPoint> grouped_gemm_efficiency_by_rows;
  // The same rate for a bf16/fp16 call of a kernel of this GPU's own generation, where its
  // kernels reach another fraction of their peak than the 8-bit ones the rows curve was
  // measured on; empty (or an older generation's kernel): grouped_gemm_efficiency_by_rows.
  std::vector<EfficiencyPoint> grouped_gemm_efficiency_by_rows_16bit;
  // The same rate for an fp8 call with 128 x 128 weight block scales (ComputeOp::block_scaled:
  // DeepSeek-V3-style checkpoints, inference.fp8_scaling: block), whose kernels rescale every
  // 128-deep slice of K; empty: grouped_gemm_efficiency_by_rows.
  std::vector<EfficiencyPoint> grouped_gemm_efficiency_by_rows_fp8_block;
  // That rate by the expert's shape: a factor on grouped_gemm_efficiency_by_rows keyed by one
  // expert's weight elements N x K (a row's work; few per expert: the per-tile and per-expert
  // fixed work weighs more), 1 at the shapes the rows curve was measured on; empty: no factor.
  std::vector<EfficiencyPoint> grouped_gemm_scale_by_expert_weights;
  // A 4-bit call's rate by its rows at an expert of grouped_gemm_scale_by_expert_weights' first
  // point's elements, measured there (it replaces that point's factor, which then varies with the
  // rows); empty: the factor as given.
  std::vector<EfficiencyPoint> grouped_gemm_efficiency_by_rows_small_expert_4bit;
  // An Ampere-generation GEMM kernel (Sm80: mma.sync fed by cp.async, CUTLASS 2.x) on this GPU
  // against its own generation's at the same shapes: what an engine that ships only Sm80 MoE
  // kernels gets (StackSpec::moe_gemm_generation). 1: Sm80 is the GPU's own generation (A100,
  // L40S) or no figure is known.
  double sm80_gemm_scale = 1;
  double generation_scale(KernelGeneration generation) const {
    return generation == KernelGeneration::sm80 ? sm80_gemm_scale : 1.0;
  }
  int sms = 0;                          // streaming multiprocessors (0 = unknown: no wave quantization)
  double memory_efficiency = 1;         // achievable fraction of HBM bandwidth
  // last-level cache the kernels read through (a GPU's L2, a CPU's L3); 0: not modelled.
  // An inference pass whose weights and KV cache fit in it streams its GEMMs' operands
  // from it (kernel_efficiency "gemm_cached").
  std::int64_t cache_bytes = 0;
  // A few-row GEMM's time re-using a working set of this many bytes pass after pass, against
  // the same GEMM out of cache ([[bytes, fraction <= 1], ...]; `twinsim calibrate`'s reuse
  // sweep, calibrate/cache_reuse.hpp): the serving GEMMs' memory side at their pass's working
  // set (sim/cost/compute_cost.hpp gemm_reuse_factor). Empty: the binary cache_bytes pick.
  std::vector<EfficiencyPoint> gemm_reuse_time;
  // The processes that re-used their own working sets at once when gemm_reuse_time was
  // measured, one a core, all sharing the last-level cache (`twinsim calibrate`'s reuse sweep);
  // 0: not recorded, the curve read at a pass's working set as it is.
  int gemm_reuse_ranks = 0;
  // The same curve measured by one process with no other running (`twinsim calibrate`,
  // calibrate/compute_rounds.hpp reuse_sweeps_alone): a plan of one rank a machine reads it
  // in place of gemm_reuse_time (hardware/core_sharing.hpp apply_cache_sharing). Empty: none.
  std::vector<EfficiencyPoint> gemm_reuse_time_alone;
  // The plan's ranks sharing that cache now over gemm_reuse_ranks (hardware/core_sharing.hpp
  // apply_cache_sharing): the curve is read at a pass's working set times this; 1: as measured.
  double gemm_reuse_set_scale = 1;
  // That GEMM's time by rows a call over its time at the reuse sweep's 4 rows ([[rows,
  // ratio], ...]; `twinsim calibrate`, calibrate/cache_reuse.hpp rows_time_curve): where given
  // with gemm_reuse_time, a serving GEMM of m rows a call (an expert's) costs that time times
  // this at m (sim/cost/compute_cost.hpp gemm_rows_factor). Empty: every row count as 4.
  std::vector<EfficiencyPoint> gemm_rows_time;
  // library workspace held on the device (cuBLAS, NCCL); -1: the memory model's GPU
  // allowance (sim/memory/buffers.cpp), 0 for the host CPU, whose libraries need none
  std::int64_t workspace_bytes = -1;
  std::vector<EfficiencyPoint> gemm_efficiency;  // by GEMM FLOPs (forward, and any pass without its own)
  // a linear layer's backward GEMMs when they run at their own rate (dgrad dX = dY W,
  // wgrad dW = dY^T X; a CPU's dgrad ran 2-10% faster than its forward, its wgrad up to
  // 19% slower, `twinsim calibrate` shapes, this host, 2026-11-22); empty: gemm_efficiency
  std::vector<EfficiencyPoint> gemm_dgrad_efficiency, gemm_wgrad_efficiency;
  // GEMMs of one math type that reach another fraction of their own peak (H100: fp8 about
  // 70% of 1979 where bf16 reaches 80% of 989): that type's curve, every pass; a type not
  // listed uses the curves above. An fp8 GEMM needs its own (sim/cost/compute_cost.cpp).
  std::map<Dtype, std::vector<EfficiencyPoint>> gemm_efficiency_by_dtype;
  // The same for another GEMM kernel family, by its name (hardware/stack_spec.hpp kGemmKernels:
  // "cutlass"), for the stacks that run it (StackSpec::gemm_kernel); a math type it does not
  // list takes the curves above.
  std::map<std::string, std::map<Dtype, std::vector<EfficiencyPoint>>, std::less<>> gemm_kernel_efficiency_by_dtype;
  // A tensor-core GEMM whose weight has a dimension that is not a whole number of 16 bytes
  // of its math type (cuBLAS's leading dimensions; 8 values of fp16/bf16, 16 of fp8/int8, 4
  // of tf32) reaches this fraction of the curves' rate: the fast kernels' 128-bit loads need
  // the alignment. 1: no penalty (a GPU not measured so, or a CPU).
  double gemm_misaligned_scale = 1;
  // The output tile edges the GPU's GEMM library picks among for a product whose output is at
  // least 128 x 128 (the simulator takes the pair that fills the SMs best; narrower edges for
  // skinny products). {128}: the one tile (NVIDIA's Matrix Multiplication Background guide).
  std::vector<std::int64_t> gemm_tile_edges = {128};
  // The GPU's fp8 GEMMs take only the TN layout (both operands K-major): Hopper and Ada
  // (Transformer Engine's is_non_tn_fp8_gemm_supported() is true for compute capability
  // 10.x and 13+ only). A linear layer's backward then needs its fp8 weight transposed in
  // memory, which Transformer Engine caches beside the fp8 weight (sim/memory/weights.hpp).
  bool fp8_gemm_tn_only = false;
  // the curves above under the power limit; absent: they hold whatever the mix of work
  std::optional<PowerLimitedGemm> power_limited_gemm;
  // The board's power limit as set (nvidia-smi -pl, the server's default), W; 0: the limit
  // power_limited_gemm was measured at. A lower limit lowers the clock the GEMMs sustain.
  double power_limit_W = 0;
  // fused attention: achieved fraction of peak by FLOPs (the op list's full-square count);
  // empty: the GEMM curve (the catalog GPUs carry published attention figures)
  PassCurves attention_efficiency;
  // the same for one head width, where it differs: the softmax's work comes per score,
  // the FLOPs per score times head_dim, so narrow heads reach fewer FLOP/s (the host's
  // flash kernel: 10.7 against 15.4 GFLOP/s forward at 32 and 64, 2 x 64 tokens,
  // 2026-11-22). By head_dim; a width not listed uses attention_efficiency.
  std::map<int, PassCurves> attention_efficiency_by_head_dim;
  // flash attention of a causal model by the keys each query attends to (the sequence,
  // kv_len), per head width: what decides a flash kernel's rate is its tile loop over the
  // sequence, not the op's total FLOPs (which TP and the batch scale). Efficiency against
  // the op list's full-rectangle FLOPs: a causal kernel skips the masked half, so values
  // reach up to 2. A head width not listed takes the nearest listed one; used for flash
  // ops that carry kv_len, before the FLOPs-keyed curves above.
  std::map<int, PassCurves> attention_efficiency_by_seq;
  // the same for another fused attention kernel, by its name (hardware/stack_spec.hpp,
  // kAttentionKernels: "cudnn", "flash3"), for the stacks that run it (StackSpec::attention_kernel);
  // attention_efficiency_by_seq is FlashAttention-2's
  std::map<std::string, std::map<int, PassCurves>, std::less<>> attention_kernel_efficiency_by_seq;
  // a serving engine's own causal prefill call (hardware/stack_spec.hpp kEnginePrefillKernels), by
  // name, then by the (query head, prompt) pairs one call runs on a GPU (heads a GPU x prompts in
  // the pass: the kernel's grid), a forward curve by prompt length; efficiency against the full
  // rectangle's FLOPs (up to 2). Measured at head width 128 only (other widths: the default price).
  std::map<std::string, std::map<int, std::vector<EfficiencyPoint>>, std::less<>> prefill_attention_by_heads;
  // the same kernels called without the causal mask (a load-balanced ring attention's steps
  // after the first: sim/training/torch_cp_exchange.hpp), by name, where measured; efficiency
  // against the full rectangle's FLOPs, all of which a non-causal kernel computes (up to 1)
  std::map<std::string, std::map<int, PassCurves>, std::less<>> attention_kernel_noncausal_efficiency_by_seq;
  // serving attention of new tokens over a KV cache (prefill chunks, decode steps), by
  // FLOPs of the full rectangle; empty: attention_efficiency's forward curve
  std::vector<EfficiencyPoint> kv_attention_efficiency;
  KvAttentionLatency kv_attention_latency;  // the same attention's floors (above)
  // A decode kernel that runs that attention's math on the CUDA cores (FlashInfer's batch
  // decode without tensor cores, StackSpec::serving_decode_cuda_core_group): the fraction of
  // the fp32 peak its math reaches, which bounds it once a KV head serves several query heads.
  // 0: not measured (the kernel priced as the tensor-core one).
  double kv_attention_cuda_core_efficiency = 0;
  // A FlashAttention-2-class prefill kernel over the paged cache (FlashInfer's FA2 template at
  // page size 1, which SGLang's FlashInfer backend runs for a prompt chunk's cached prefix,
  // StackSpec::serving_prefix_attention_fa2): its forward rate as a fraction of the 16-bit
  // peak, by the full-rectangle FLOPs of those (query, key) pairs. 0: not measured (priced as
  // the rest of the attention).
  double kv_attention_fa2_efficiency = 0;
  // FlashAttention-3's paged decode with a 128-row query tile (vLLM 0.8's FLASH_ATTN backend on
  // Hopper, before vllm-project/flash-attention PR #63; StackSpec::serving_decode_fa3_m128): the
  // fraction of hbm_bandwidth its K,V read reaches. 0: not measured (kv_cache_attention's figure).
  double kv_attention_fa3_m128_efficiency = 0;
  // memory-bound kernels by name (LayerOp::kernel: "gelu", "layernorm", "adamw", ...):
  // achieved fraction of hbm_bandwidth on the bytes the op list counts for them; a
  // kernel not named here runs at memory_efficiency. On a GPU these kernels stream at
  // near one rate; on a CPU, GeLU's math makes it 10x slower than a copy. "gemm" and
  // "gemm_cached" are the memory side of the GEMM roofline, "kv_cache_attention" that of
  // serving attention (by the bytes of q, the output and the K/V read and written;
  // models/layer_ops.hpp).
  std::map<std::string, PassCurves, std::less<>> kernel_efficiency;
  // The same kernels on 16-bit data (bf16/fp16 training), by the bytes the op list counts
  // at 2 per element; a kernel not named here uses kernel_efficiency. A GPU streams 16-bit
  // elements at the rate it streams fp32 ones, so the catalog leaves this out; a CPU widens
  // every element to fp32 for its math, which `twinsim calibrate` measures.
  std::map<std::string, PassCurves, std::less<>> kernel_efficiency_16bit;

  // Peak for a math type; throws if the GPU has no such unit (e.g. fp8 on A100).
  double peak(Dtype d) const;
  bool has_peak(Dtype d) const { return peak_flops.count(d) != 0; }
  // Achieved fraction of HBM bandwidth of `kernel` moving `bytes` in one pass over data
  // of type `data` (bf16/fp16: kernel_efficiency_16bit first).
  double kernel_memory_efficiency(std::string_view kernel, bool backward, double bytes,
                                  Dtype data = Dtype::fp32) const;
};

// Interpolates an efficiency curve (see EfficiencyPoint; the arithmetic is hardware/curve.hpp's
// interpolate_log_x); 1.0 for an empty curve.
double interpolate_efficiency(const std::vector<EfficiencyPoint>& curve, double size);

// Whether `size` lies outside a measured curve's range, where the curve holds its end
// value; a curve of fewer than two points is one published figure and has no range.
bool beyond_measured(const std::vector<EfficiencyPoint>& curve, double size);

}  // namespace twinsim
