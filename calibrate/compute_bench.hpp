#pragma once
// Microbenchmarks of the executor's own CPU kernels (kernels/cpu) on one rank: GEMM
// throughput over shapes, bandwidth of the memory-bound kernels (norms, element-wise,
// optimizer, plain copy), and flash attention.
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/samples.hpp"
#include "hardware/gpu_spec.hpp"

namespace twinsim::calibrate {

struct GemmPoint {
  std::int64_t m = 0, n = 0, k = 0;  // the linear layer's tokens, outputs and inputs
  double flops = 0;  // 2 m n k
  Stats seconds;
  GemmPass pass = GemmPass::fwd;  // which of its three GEMMs (hardware/gpu_spec.hpp)
  Dtype dtype = Dtype::fp32;      // of x, W and y: bf16 / fp16 take the GEMM's 16-bit path
};

struct MemoryPoint {
  std::string kernel;  // "copy", "add", or a kernel of the op list (models/layer_ops.hpp kKernelNames)
  // the bytes the simulator's op list counts for this call: what the kernel reads plus
  // writes in the forward, twice the forward's in the backward (sim/training/layer_costs.cpp)
  double bytes = 0;
  Stats seconds;
  bool backward = false;
  // the kernel on bf16 data, its bytes counted at 2 per element as the simulator counts
  // a 16-bit run's: fitted into kernel_efficiency_16bit
  bool half = false;
};

struct AttentionPoint {
  int batch = 0, seq = 0, heads = 0, head_dim = 0;
  bool backward = false;
  double flops = 0;  // 4 b s^2 h d forward (QK^T and PV, full square), twice that backward
  Stats seconds;
  // serving (kernels/cpu/kv_cache_attention): `seq` new tokens after `cached` ones, K/V
  // heads `kv_heads`; flops 4 b n (cached + n) h d, the serving op list's full rectangle
  bool kv_cache = false;
  int cached = 0, kv_heads = 0;
  // MLA's absorbed decode (exec/model/decoder_mla.cpp mla_decode_attend): one latent head of
  // `head_dim` that is K, its first `v_head_dim` columns V (models/layer_ops.hpp
  // kMlaDecodeAttentionKernel); 0: K and V heads of head_dim each
  int v_head_dim = 0;
  // kv_cache: the bytes the serving op list counts (sim/inference/iteration_ops.cpp): q
  // and the output, K and V read over cached + n rows and written for the n new ones
  double bytes = 0;
};

struct SweepOptions {
  bool quick = false;  // fewer shapes and repeats: a smoke test, not a calibration
  int repeats = 7;
  // A repeat lasts at least this long, so that on a shared machine it sees the scheduler's
  // share of a core as a training step does, not one lucky time slice.
  double min_repeat_s = 0.02;
  // the working set a pass keeps warm here (cache_reuse.hpp): "gemm_cached" rotates through half of it
  double cache_bytes = 0;
};

// Buffer sets a sweep rotates through so that each call finds its operands out of cache,
// as in a training step: together at least 64 MiB (twice this host's 32 MiB L3).
int cold_sets(std::size_t bytes_per_set);
std::vector<GemmPoint> gemm_sweep(const SweepOptions& o);
std::vector<MemoryPoint> memory_sweep(const SweepOptions& o);
// A decode's GEMMs (1-16 rows against the executor's projections' weights), as "gemm"
// points with operands out of cache, or as "gemm_cached" ones rotating through half of
// o.cache_bytes (compute_bench.cpp says why).
void add_decode_gemm_points(std::vector<MemoryPoint>& out, const SweepOptions& o, bool cached);
std::vector<AttentionPoint> attention_sweep(const SweepOptions& o);
// The gradients the "quantize" point compresses (int8, error feedback): a backward's,
// N(0, 0.01^2), never the zeroed buffer whose all-zero blocks skip the divide and round.
std::vector<float> compressed_grads(std::size_t n);
// Those gradients packed as one int8 chunk (exec/train/quantized_exchange.hpp pack_quantized):
// the blocks the "dequantize" point adds, each with its nonzero scale and steps.
std::vector<unsigned char> packed_grads(std::size_t n);

}  // namespace twinsim::calibrate
