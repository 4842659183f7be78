// Speed of the CUDA kernels against the GPU's catalog peak (hardware/catalog/gpus):
// GEMM and attention in TFLOP/s, memory-bound kernels in GB/s, each with the fraction of
// the peak it reached (counter "peak_pct"). Times come from CUDA events around each call
// (manual time), not host clocks. Run on a GPU machine: scripts/gpu_suite.sh, or
//   build-cuda/bench/bench_cuda_kernels --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <string>

#include "exec/cuda/device_check.hpp"

#ifndef TWINSIM_HAVE_CUDA

static void BM_CudaKernels(benchmark::State& state) {
  state.SkipWithError("built without the CUDA backend (nvcc not found or TWINSIM_CUDA=OFF)");
  for (auto _ : state) {
  }
}
BENCHMARK(BM_CudaKernels);

#else

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "kernels/cuda/activation.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/flash_attention.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/loss.hpp"
#include "kernels/cuda/norm.hpp"
#include "kernels/cuda/optimizer.hpp"
#include "scenario/load.hpp"

namespace {

namespace gpu = twinsim::kernels::cuda;
using twinsim::Dtype;
using twinsim::GpuSpec;

// The catalog entry of the GPU we run on, from the device name ("NVIDIA H100 80GB HBM3").
std::optional<GpuSpec> catalog_entry() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return std::nullopt;
  std::string name = prop.name;
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  const double gib = static_cast<double>(prop.totalGlobalMem) / (1 << 30);
  const char* entry = has("H200")   ? "h200-sxm"
                      : has("H100") ? "h100-sxm"
                      : has("B200") ? "b200"
                      : has("A100") ? (gib > 50 ? "a100-sxm-80gb" : "a100-sxm-40gb")
                                    : nullptr;
  if (entry == nullptr) return std::nullopt;
  return twinsim::catalog_gpu(entry);
}

const std::optional<GpuSpec>& peak_gpu() {
  static const std::optional<GpuSpec> spec = catalog_entry();
  return spec;
}

bool skip_without_gpu(benchmark::State& state) {
  std::string why;
  if (twinsim::exec::cuda_device_available(&why)) return false;
  state.SkipWithError(why.c_str());
  return true;
}

// Times `op` with CUDA events per iteration; sets the rate counter `unit` (work / s) and
// peak_pct against `peak` (work / s, 0 = unknown).
void run_timed(benchmark::State& state, const std::function<void()>& op, double work,
               const char* unit, double unit_scale, double peak) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  op();  // warm-up: cuBLAS heuristics, lazy module loading
  CUDA_CHECK(cudaDeviceSynchronize());
  double total_s = 0;
  for (auto _ : state) {
    CUDA_CHECK(cudaEventRecord(start));
    op();
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3);
    total_s += ms * 1e-3;
  }
  double rate = work * static_cast<double>(state.iterations()) / total_s;
  state.counters[unit] = rate / unit_scale;
  if (peak > 0) state.counters["peak_pct"] = 100.0 * rate / peak;
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
}

double peak_flops(Dtype d) {
  const auto& g = peak_gpu();
  return g && g->has_peak(d) ? g->peak(d) : 0.0;
}

double peak_bytes_per_s() { return peak_gpu() ? peak_gpu()->hbm_bandwidth_Bps : 0.0; }

struct DeviceMemory {
  void* p = nullptr;
  explicit DeviceMemory(std::size_t bytes) {
    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 0, bytes));
  }
  ~DeviceMemory() { cudaFree(p); }
  float* f() { return static_cast<float*>(p); }
};

// --- GEMM: C[n, n] = A B, 2 n^3 FLOPs -------------------------------------------------------

// Fills `count` elements of `type` with uniform values in [-1, 1): a GEMM on zeros (the
// allocation's memset) draws less power and runs 10-20% faster than on real data (one
// H200: 780-820 against 640-700 TFLOP/s for the same layer shapes back to back,
// scenarios/validation/microbench/measured_2026-11-26/h200/gemm_conditions.csv).
void fill_random(void* device, std::size_t count, gpu::GemmType type) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = uniform(rng);
  if (type == gpu::GemmType::fp32 || type == gpu::GemmType::tf32) {
    CUDA_CHECK(cudaMemcpy(device, values.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    return;
  }
  std::vector<std::uint16_t> bits(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (type == gpu::GemmType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16(values[i]);
      std::memcpy(&bits[i], &h, sizeof(bits[i]));
    } else {
      const __half h = __float2half(values[i]);
      std::memcpy(&bits[i], &h, sizeof(bits[i]));
    }
  }
  CUDA_CHECK(cudaMemcpy(device, bits.data(), count * sizeof(std::uint16_t), cudaMemcpyHostToDevice));
}

void BM_Gemm(benchmark::State& state, gpu::GemmType type, Dtype peak_type, std::size_t element_bytes) {
  if (skip_without_gpu(state)) return;
  const int n = static_cast<int>(state.range(0));
  DeviceMemory a(element_bytes * n * n), b(element_bytes * n * n), c(element_bytes * n * n);
  fill_random(a.p, static_cast<std::size_t>(n) * n, type);
  fill_random(b.p, static_cast<std::size_t>(n) * n, type);
  run_timed(state, [&] { gpu::gemm_forward_typed(type, a.p, b.p, c.p, n, n, n, false, true); },
            2.0 * n * n * n, "TFLOP/s", 1e12, peak_flops(peak_type));
}
BENCHMARK_CAPTURE(BM_Gemm, bf16, gpu::GemmType::bf16, Dtype::bf16, 2)->Arg(4096)->Arg(8192)->UseManualTime();
BENCHMARK_CAPTURE(BM_Gemm, fp16, gpu::GemmType::fp16, Dtype::fp16, 2)->Arg(4096)->Arg(8192)->UseManualTime();
BENCHMARK_CAPTURE(BM_Gemm, tf32, gpu::GemmType::tf32, Dtype::tf32, 4)->Arg(4096)->UseManualTime();
BENCHMARK_CAPTURE(BM_Gemm, fp32, gpu::GemmType::fp32, Dtype::fp32, 4)->Arg(4096)->UseManualTime();

// --- attention: batch 4, 16 heads, head_dim 128, GQA with 4 kv heads ------------------------
// Causal forward FLOPs: two matmuls of 2 s^2 d per head, halved by the mask
// (FlashAttention-2 paper, Sec. 4.1, "causal ... half"); backward = 2.5 x forward (5 matmuls).
// The kernel runs on the fp32 CUDA cores, so its peak is the fp32 one.
twinsim::kernels::AttentionShape attention_shape(int seq) { return {4, seq, 16, 4, 128}; }

double attention_fwd_flops(const twinsim::kernels::AttentionShape& s) {
  return 4.0 * s.batch * s.heads * static_cast<double>(s.seq) * s.seq * s.head_dim / 2.0;
}

void BM_FlashAttention(benchmark::State& state, bool backward) {
  if (skip_without_gpu(state)) return;
  auto s = attention_shape(static_cast<int>(state.range(0)));
  std::size_t q = sizeof(float) * s.batch * s.seq * s.heads * s.head_dim;
  std::size_t kv = sizeof(float) * s.batch * s.seq * s.kv_heads * s.head_dim;
  DeviceMemory dq(q), dk(kv), dv(kv), out(q), dout(q), lse(sizeof(float) * s.batch * s.heads * s.seq),
      gq(q), gk(kv), gv(kv);
  gpu::flash_attention_forward(dq.f(), dk.f(), dv.f(), out.f(), lse.f(), s);
  double flops = attention_fwd_flops(s) * (backward ? 2.5 : 1.0);
  run_timed(state, [&] {
    if (backward)
      gpu::flash_attention_backward(dq.f(), dk.f(), dv.f(), out.f(), lse.f(), dout.f(), gq.f(), gk.f(), gv.f(), s);
    else
      gpu::flash_attention_forward(dq.f(), dk.f(), dv.f(), out.f(), lse.f(), s);
  }, flops, "TFLOP/s", 1e12, peak_flops(Dtype::fp32));
}
BENCHMARK_CAPTURE(BM_FlashAttention, fwd, false)->Arg(1024)->Arg(4096)->UseManualTime();
BENCHMARK_CAPTURE(BM_FlashAttention, bwd, true)->Arg(1024)->Arg(4096)->UseManualTime();

// --- memory-bound kernels: bytes each must move at least once, against HBM bandwidth -------
// rows x dim = 16384 x 4096 fp32 (256 MiB per tensor), far beyond L2.
constexpr int kRows = 16384, kDim = 4096;
constexpr long kElems = static_cast<long>(kRows) * kDim;

void BM_LayerNormFwd(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  DeviceMemory x(4 * kElems), y(4 * kElems), g(4 * kDim), b(4 * kDim), m(4 * kRows), r(4 * kRows);
  run_timed(state, [&] { gpu::layernorm_forward(x.f(), g.f(), b.f(), y.f(), m.f(), r.f(), kRows, kDim, 1e-5f); },
            2.0 * 4 * kElems, "GB/s", 1e9, peak_bytes_per_s());  // read x, write y
}
BENCHMARK(BM_LayerNormFwd)->UseManualTime();

void BM_RmsNormBwd(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  DeviceMemory x(4 * kElems), dy(4 * kElems), dx(4 * kElems), g(4 * kDim), dg(4 * kDim), r(4 * kRows);
  run_timed(state, [&] { gpu::rmsnorm_backward(dy.f(), x.f(), g.f(), r.f(), dx.f(), dg.f(), kRows, kDim, false); },
            // dx pass reads dy, x and writes dx; the dgamma pass reads dy and x again
            5.0 * 4 * kElems, "GB/s", 1e9, peak_bytes_per_s());
}
BENCHMARK(BM_RmsNormBwd)->UseManualTime();

void BM_Gelu(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  DeviceMemory x(4 * kElems), y(4 * kElems);
  run_timed(state, [&] { gpu::gelu_forward(x.f(), y.f(), kElems); }, 2.0 * 4 * kElems, "GB/s", 1e9,
            peak_bytes_per_s());
}
BENCHMARK(BM_Gelu)->UseManualTime();

void BM_SwigluFwd(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  DeviceMemory g(4 * kElems), u(4 * kElems), y(4 * kElems);
  run_timed(state, [&] { gpu::swiglu_forward(g.f(), u.f(), y.f(), kElems); }, 3.0 * 4 * kElems, "GB/s", 1e9,
            peak_bytes_per_s());
}
BENCHMARK(BM_SwigluFwd)->UseManualTime();

void BM_AdamW(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  DeviceMemory p(4 * kElems), g(4 * kElems), m(4 * kElems), v(4 * kElems);
  gpu::AdamWConfig config;
  run_timed(state, [&] { gpu::adamw_step(p.f(), g.f(), m.f(), v.f(), kElems, 1, config); },
            7.0 * 4 * kElems, "GB/s", 1e9, peak_bytes_per_s());  // read p, g, m, v; write p, m, v
}
BENCHMARK(BM_AdamW)->UseManualTime();

void BM_CrossEntropyFwd(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int tokens = 8192, vocab = 32000;
  DeviceMemory logits(4L * tokens * vocab), targets(4L * tokens), lse(4L * tokens), loss(4);
  run_timed(state, [&] {
    gpu::cross_entropy_forward_async(logits.f(), static_cast<int*>(targets.p), lse.f(), loss.f(), tokens, vocab);
  }, 4.0 * tokens * vocab, "GB/s", 1e9, peak_bytes_per_s());  // the logits, read once (two passes hit L2 partly)
}
BENCHMARK(BM_CrossEntropyFwd)->UseManualTime();

}  // namespace

#endif
