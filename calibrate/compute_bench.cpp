#include "calibrate/compute_bench.hpp"

#include <cstring>

#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/flash_attention.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/optimizer.hpp"

namespace twinsim::calibrate {

namespace {

namespace k = twinsim::kernels::cpu;

std::vector<float> filled(std::size_t n, float v = 0.5f) { return std::vector<float>(n, v); }

struct Shape {
  int m, n, k;
};

// Squares for the curve's shape, and the projections of the executor's small models
// (tokens = micro-batch x sequence, 128..512; hidden 256; FFN 688..1024) where it runs.
std::vector<Shape> gemm_shapes(bool quick) {
  if (quick) return {{64, 64, 64}, {128, 768, 256}, {256, 256, 256}, {512, 512, 512}};
  return {{32, 32, 32},     {64, 64, 64},     {128, 128, 128},  {256, 256, 256},  {384, 384, 384},
          {512, 512, 512},  {768, 768, 768},  {1024, 1024, 1024},
          {128, 256, 256},  {128, 768, 256},  {128, 1024, 256}, {128, 256, 1024}, {128, 1376, 256},
          {128, 256, 688},  {256, 768, 256},  {256, 1024, 256}, {256, 256, 1024}, {512, 768, 256},
          {128, 512, 256},  {64, 256, 256},   {128, 256, 128},  {256, 128, 128}};
}

// Elements per buffer: from L2-resident (16 Ki floats = 64 KiB) to DRAM (4 Mi floats).
std::vector<long> memory_sizes(bool quick) {
  if (quick) return {1L << 14, 1L << 17, 1L << 20};
  return {1L << 13, 1L << 14, 1L << 15, 1L << 16, 1L << 17, 1L << 18, 1L << 19, 1L << 20, 1L << 21, 1L << 22};
}

}  // namespace

std::vector<GemmPoint> gemm_sweep(const SweepOptions& o) {
  std::vector<GemmPoint> out;
  for (const Shape& s : gemm_shapes(o.quick)) {
    std::vector<float> a = filled(static_cast<std::size_t>(s.m) * s.k), b = filled(static_cast<std::size_t>(s.k) * s.n),
                       c = filled(static_cast<std::size_t>(s.m) * s.n);
    // the executor's linear layer: y = x W^T, W stored [out, in] (kernels/README.md)
    const Stats t = time_per_call([&] { k::gemm_forward(a.data(), b.data(), c.data(), s.m, s.n, s.k, false, true); },
                                  o.repeats, o.min_repeat_s);
    out.push_back({s.m, s.n, s.k, 2.0 * s.m * s.n * s.k, t});  // one multiply and one add per (i, j, l)
  }
  return out;
}

std::vector<MemoryPoint> memory_sweep(const SweepOptions& o) {
  std::vector<MemoryPoint> out;
  constexpr double kF = sizeof(float);
  for (long n : memory_sizes(o.quick)) {
    std::vector<float> x = filled(n), y = filled(n), z = filled(n), g = filled(n, 0.01f), m = filled(n, 0), v = filled(n, 0);
    const int dim = 256, rows = static_cast<int>(n / dim);
    std::vector<float> gamma = filled(dim, 1.0f), beta = filled(dim, 0.0f), mean = filled(rows), rstd = filled(rows);
    out.push_back({"copy", 2 * kF * n,
                   time_per_call([&] { std::memcpy(y.data(), x.data(), n * sizeof(float)); }, o.repeats, o.min_repeat_s)});
    out.push_back({"add", 3 * kF * n, time_per_call([&] {
                     for (long i = 0; i < n; ++i) z[i] = x[i] + y[i];
                   }, o.repeats, o.min_repeat_s)});
    out.push_back({"gelu", 2 * kF * n, time_per_call([&] { k::gelu_forward(x.data(), y.data(), n); }, o.repeats, o.min_repeat_s)});
    out.push_back({"layernorm", 2 * kF * n, time_per_call([&] {
                     k::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                                          rows, dim, 1e-5f);
                   }, o.repeats, o.min_repeat_s)});
    // AdamW reads params, grads, m, v and writes params, m, v: 7 floats per parameter
    int step = 0;
    out.push_back({"adamw", 7 * kF * n, time_per_call([&] {
                     k::adamw_step(x.data(), g.data(), m.data(), v.data(), n, ++step, k::AdamWConfig{});
                   }, o.repeats, o.min_repeat_s)});
  }
  return out;
}

std::vector<AttentionPoint> attention_sweep(const SweepOptions& o) {
  std::vector<AttentionPoint> out;
  const std::vector<int> seqs = o.quick ? std::vector<int>{64} : std::vector<int>{32, 64, 128, 256};
  for (int seq : seqs) {
    for (int head_dim : {32, 64}) {
      kernels::AttentionShape sh;
      sh.batch = 2;
      sh.seq = seq;
      sh.heads = 256 / head_dim;
      sh.kv_heads = sh.heads;
      sh.head_dim = head_dim;
      const std::size_t n = static_cast<std::size_t>(sh.batch) * seq * sh.heads * head_dim;
      std::vector<float> q = filled(n, 0.1f), kk = filled(n, 0.2f), v = filled(n, 0.3f), out_t = filled(n),
                         dout = filled(n, 0.01f), dq = filled(n), dk = filled(n), dv = filled(n),
                         lse = filled(static_cast<std::size_t>(sh.batch) * sh.heads * seq);
      // full-square FLOPs, the convention of the simulator's op list (Narayanan et al. 2021, App.)
      const double fwd = 4.0 * sh.batch * seq * static_cast<double>(seq) * sh.heads * head_dim;
      out.push_back({sh.batch, seq, sh.heads, head_dim, false, fwd, time_per_call([&] {
                       k::flash_attention_forward(q.data(), kk.data(), v.data(), out_t.data(), lse.data(), sh);
                     }, o.repeats, o.min_repeat_s)});
      out.push_back({sh.batch, seq, sh.heads, head_dim, true, 2 * fwd, time_per_call([&] {
                       k::flash_attention_backward(q.data(), kk.data(), v.data(), out_t.data(), lse.data(),
                                                   dout.data(), dq.data(), dk.data(), dv.data(), sh);
                     }, o.repeats, o.min_repeat_s)});
    }
  }
  return out;
}

}  // namespace twinsim::calibrate
