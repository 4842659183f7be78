// Our CPU GEMM (Eigen) against OpenBLAS cblas_sgemm, both single-threaded, in one run.
// Run with OPENBLAS_CORETYPE unset so OpenBLAS picks its kernel from the CPU; the
// context lines print which kernel it picked and which build of ours ran.
// Issue target: ours >= 0.8x OpenBLAS on 1024 x 1024 x 1024. The GFLOPS counter is
// 2 m n k per call (one multiply and one add per term of each dot product).
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/gemm_paths.hpp"

#ifdef TWINSIM_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

struct GemmOperands {
  int m, n, k;
  std::vector<float> a, b, c;
  explicit GemmOperands(int size)
      : m(size), n(size), k(size), a(size_t(size) * size), b(size_t(size) * size),
        c(size_t(size) * size) {
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) / 17.0f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 13) / 13.0f - 0.5f;
  }
};

void set_flops(benchmark::State& state, const GemmOperands& g) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * g.m * g.n * g.k,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
  state.counters["GFLOPS"].value /= 1e9;
}

// Arg 0: matrix size; arg 1: 1 to use B transposed (the layout of linear_forward, x W^T).
void BM_GemmTwinsim(benchmark::State& state) {
  Eigen::setNbThreads(1);
  GemmOperands g(static_cast<int>(state.range(0)));
  bool trans_b = state.range(1) != 0;
  for (auto _ : state) {
    twinsim::kernels::cpu::gemm_forward(g.a.data(), g.b.data(), g.c.data(), g.m, g.n, g.k, false,
                                        trans_b);
    benchmark::DoNotOptimize(g.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, g);
}
BENCHMARK(BM_GemmTwinsim)->Args({1024, 0})->Args({1024, 1})->Unit(benchmark::kMillisecond);

// The same Eigen body built with the project's portable flags, for the record.
void BM_GemmTwinsimPortable(benchmark::State& state) {
  GemmOperands g(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    twinsim::kernels::cpu::detail::gemm_portable(g.a.data(), g.b.data(), g.c.data(), g.m, g.n,
                                                 g.k, false, false, 1.0f, 0.0f);
    benchmark::DoNotOptimize(g.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, g);
}
BENCHMARK(BM_GemmTwinsimPortable)->Args({1024})->Unit(benchmark::kMillisecond);

// The mixed-precision path (gemm_forward with 16-bit operands: tiles widened into fp32
// scratch, fp32 accumulation, one rounding on store) against the all-float product on the
// same shape, x W^T as linear_forward calls it. Args: m, n, k. 128 x 688 x 256 is a small
// MLP projection (tokens x ffn x hidden); GFLOPS counts the same 2 m n k for both.
template <class T>
void BM_GemmStorage(benchmark::State& state) {
  Eigen::setNbThreads(1);
  const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
            k = static_cast<int>(state.range(2));
  std::vector<T> a(size_t(m) * k), b(size_t(n) * k), c(size_t(m) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = twinsim::kernels::from_float<T>(float(i % 17) / 17.0f - 0.5f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = twinsim::kernels::from_float<T>(float(i % 13) / 13.0f - 0.5f);
  for (auto _ : state) {
    twinsim::kernels::cpu::gemm_forward(a.data(), b.data(), c.data(), m, n, k, false, true);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * m * n * k / 1e9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_TEMPLATE(BM_GemmStorage, float)->Args({128, 688, 256})->Args({512, 512, 512});
BENCHMARK_TEMPLATE(BM_GemmStorage, twinsim::kernels::bf16)->Args({128, 688, 256})->Args({512, 512, 512});
BENCHMARK_TEMPLATE(BM_GemmStorage, twinsim::kernels::fp16)->Args({128, 688, 256})->Args({512, 512, 512});

const bool kGemmContext = [] {
  benchmark::AddCustomContext("twinsim_gemm_backend", twinsim::kernels::cpu::gemm_backend());
  return true;
}();

#ifdef TWINSIM_HAVE_OPENBLAS
void BM_GemmOpenBlas(benchmark::State& state) {
  openblas_set_num_threads(1);
  GemmOperands g(static_cast<int>(state.range(0)));
  bool trans_b = state.range(1) != 0;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, g.m, g.n, g.k,
                1.0f, g.a.data(), g.k, g.b.data(), trans_b ? g.k : g.n, 0.0f, g.c.data(), g.n);
    benchmark::DoNotOptimize(g.c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, g);
}
BENCHMARK(BM_GemmOpenBlas)->Args({1024, 0})->Args({1024, 1})->Unit(benchmark::kMillisecond);

// Which kernel OpenBLAS picked at load time (it dispatches on the CPU it finds, or on
// OPENBLAS_CORETYPE): printed in the run's context so the comparison can be read.
const bool kOpenBlasContext = [] {
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("openblas_config", openblas_get_config());
  return true;
}();
#endif

}  // namespace
