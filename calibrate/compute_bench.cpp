#include "calibrate/compute_bench.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "calibrate/host_path.hpp"
#include "exec/runtime/storage_dtype.hpp"
#include "exec/train/grad_compression.hpp"
#include "exec/train/mixed_precision.hpp"
#include "exec/train/quantized_exchange.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/flash_attention.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/kv_cache_attention.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/loss.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cpu/optimizer.hpp"
#include "kernels/cpu/residual.hpp"
#include "kernels/cpu/rope.hpp"
#include "models/layer_ops.hpp"
#include "models/optimizer_state.hpp"

namespace twinsim::calibrate {

namespace {

namespace k = twinsim::kernels::cpu;

std::vector<float> filled(std::size_t n, float v = 0.5f) { return std::vector<float>(n, v); }

// Inputs drawn from N(0, scale^2) as a layer's activations are after a norm: a kernel
// whose math branches on its values (libm's transcendentals do) runs at its speed on
// real data, not on the perfectly predicted branches of a constant.
std::vector<float> activation_like(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

// The values of v in the storage type T (each rounded once).
template <class T>
std::vector<T> stored(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = kernels::from_float<T>(v[i]);
  return out;
}

struct Shape {
  int m, n, k;
};

// The executor's own projections (tokens x outputs x inputs), where the 16-bit path is
// timed against fp32 for the peak of bf16 and fp16.
std::vector<Shape> gemm_16bit_shapes(bool quick) {
  if (quick) return {{128, 768, 256}};
  return {{128, 256, 256}, {128, 768, 256}, {128, 256, 688}, {128, 1376, 256}, {256, 256, 256}, {512, 512, 512}};
}

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

// A GEMM's weights were last touched a step ago and its activations several ops ago.
int cold_sets(std::size_t bytes_per_set) {
  constexpr std::size_t kColdBytes = 64u << 20;
  return static_cast<int>(std::clamp<std::size_t>(kColdBytes / bytes_per_set + 1, 2, 256));
}

namespace {

// The executor's linear layer (kernels/cpu/linear.hpp) with m tokens, k inputs, n outputs
// in the storage type T: forward y = x W^T + b, dgrad dx = dy W, wgrad dW += dy^T x: each
// 2mnk FLOPs, each its own point (the simulator prices each pass with its own curve).
template <class T>
void add_linear_points(std::vector<GemmPoint>& out, const Shape& s, const SweepOptions& o) {
  const std::size_t xs = static_cast<std::size_t>(s.m) * s.k, ws = static_cast<std::size_t>(s.n) * s.k,
                    ys = static_cast<std::size_t>(s.m) * s.n;
  const int sets = cold_sets((xs + ws + ys) * sizeof(T));
  std::vector<std::vector<T>> x(sets, stored<T>(filled(xs))), w(sets, stored<T>(filled(ws))), y(sets, stored<T>(filled(ys)));
  const std::vector<T> b = stored<T>(filled(s.n));
  int i = 0;
  auto next = [&] { return i = (i + 1) % sets; };
  const Stats fwd = time_per_call([&] { const int j = next(); k::linear_forward(x[j].data(), w[j].data(), b.data(), y[j].data(), s.m, s.k, s.n); },
                                  o.repeats, o.min_repeat_s);
  const Stats dgrad = time_per_call([&] { const int j = next(); k::linear_backward_input(y[j].data(), w[j].data(), x[j].data(), s.m, s.k, s.n); },
                                    o.repeats, o.min_repeat_s);
  const Stats wgrad = time_per_call(
      [&] { const int j = next(); k::linear_backward_weight(y[j].data(), x[j].data(), w[j].data(), s.m, s.k, s.n, true); },
      o.repeats, o.min_repeat_s);
  const double flops = 2.0 * s.m * s.n * s.k;  // one multiply and one add per (i, j, l)
  const Dtype dtype = exec::storage_dtype<T>();
  out.push_back({s.m, s.n, s.k, flops, fwd, GemmPass::fwd, dtype});
  out.push_back({s.m, s.n, s.k, flops, dgrad, GemmPass::dgrad, dtype});
  out.push_back({s.m, s.n, s.k, flops, wgrad, GemmPass::wgrad, dtype});
}

}  // namespace

std::vector<GemmPoint> gemm_sweep(const SweepOptions& o) {
  std::vector<GemmPoint> out;
  for (const Shape& s : gemm_shapes(o.quick)) add_linear_points<float>(out, s, o);
  for (const Shape& s : gemm_16bit_shapes(o.quick)) {
    add_linear_points<kernels::bf16>(out, s, o);
    add_linear_points<kernels::fp16>(out, s, o);
  }
  return out;
}

namespace {

// The op list's memory-bound kernels, each at every size, on data of the storage type T
// (float, or bf16 as a 16-bit run keeps its activations): the bytes are what the
// simulator counts for the op (models/layer_ops.cpp, models/head_ops.cpp, and
// step_graph.cpp for the optimizer) at sizeof(T) bytes an element; the backward counts
// twice the forward (sim/training/layer_costs.cpp). `n` is the elements of the op's main
// tensor. The norms' statistics and the cross-entropy's logits stay fp32 in any run.
template <class T>
void add_kernel_points(std::vector<MemoryPoint>& out, long n, const SweepOptions& o) {
  constexpr double kF = sizeof(T);
  constexpr bool half = !std::is_same_v<T, float>;
  const int dim = 256, rows = static_cast<int>(n / dim);
  std::vector<T> x = stored<T>(activation_like(n, 1)), y = stored<T>(activation_like(n, 2)), z = stored<T>(filled(n)),
                 dy = stored<T>(activation_like(n, 3, 0.01f)), dx = stored<T>(filled(n));
  std::vector<T> gamma = stored<T>(filled(dim, 1.0f)), beta = stored<T>(filled(dim, 0.0f)), dgamma = stored<T>(filled(dim)),
                 dbeta = stored<T>(filled(dim));
  std::vector<float> mean = filled(rows), rstd = filled(rows, 1.0f);
  auto add = [&](std::string_view kernel, double fwd_bytes, const std::function<void()>& fwd,
                 const std::function<void()>& bwd) {
    out.push_back({std::string(kernel), fwd_bytes, time_per_call(fwd, o.repeats, o.min_repeat_s), false, half});
    if (bwd) out.push_back({std::string(kernel), 2 * fwd_bytes, time_per_call(bwd, o.repeats, o.min_repeat_s), true, half});
  };
  add(kernel_names::kGelu, 2 * kF * n, [&] { k::gelu_forward(x.data(), y.data(), n); },
      [&] { k::gelu_backward(dy.data(), x.data(), dx.data(), n); });
  add(kernel_names::kSwiglu, 3 * kF * n, [&] { k::swiglu_forward(x.data(), y.data(), z.data(), n); },
      [&] { k::swiglu_backward(dy.data(), x.data(), y.data(), dx.data(), z.data(), n); });
  const double norm_bytes = 2 * kF * n + 2 * kF * dim;  // input and output, gamma and beta
  add(kernel_names::kLayerNorm, norm_bytes,
      [&] { k::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, dim, 1e-5f); },
      [&] { k::layernorm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(), dgamma.data(),
                                  dbeta.data(), rows, dim, true); });
  add(kernel_names::kRmsNorm, norm_bytes, [&] { k::rmsnorm_forward(x.data(), gamma.data(), y.data(), rstd.data(), rows, dim, 1e-5f); },
      [&] { k::rmsnorm_backward(dy.data(), x.data(), gamma.data(), rstd.data(), dx.data(), dgamma.data(), rows, dim, true); });
  // Q or K of 2 sequences, 4 heads of 64: rotated in place, read and written once
  const int heads = 4, head_dim = 64, seq = static_cast<int>(n / (2 * heads * head_dim));
  add(kernel_names::kRope, 2 * kF * n, [&] { k::rope_forward(x.data(), x.data(), 2, seq, heads, head_dim, 10000.0f); },
      [&] { k::rope_backward(dy.data(), dy.data(), 2, seq, heads, head_dim, 10000.0f); });
  add(kernel_names::kResidual, 3 * kF * n, [&] { k::residual_forward(x.data(), y.data(), gamma.data(), z.data(), rows, dim); },
      [&] { k::residual_backward(dy.data(), dgamma.data(), rows, dim, true); });
  // token rows of a 512-row table plus a learned position row: (2 tables + 1) x activation
  const int vocab = 512, positions = 32, batch = rows / positions;
  std::vector<T> wte = stored<T>(filled(static_cast<std::size_t>(vocab) * dim)),
                 wpe = stored<T>(filled(static_cast<std::size_t>(positions) * dim)), dwte = stored<T>(filled(wte.size())),
                 dwpe = stored<T>(filled(wpe.size()));
  std::vector<int> tokens(rows);
  for (int i = 0; i < rows; ++i) tokens[i] = (i * 7919) % vocab;
  add(kernel_names::kEmbedding, 3 * kF * n, [&] { k::embedding_forward(tokens.data(), wte.data(), wpe.data(), y.data(), batch, positions, dim); },
      [&] { k::embedding_backward(dy.data(), tokens.data(), dwte.data(), dwpe.data(), batch, positions, dim); });
  if constexpr (!half) {
    // the n elements as [n / vocab tokens, vocab] logits: read them, write fp32 probabilities
    const int ce_tokens = static_cast<int>(n / vocab);
    std::vector<int> targets(ce_tokens);
    for (int i = 0; i < ce_tokens; ++i) targets[i] = (i * 31) % vocab;
    add(kernel_names::kCrossEntropy, (kF + 4) * n,
        [&] { k::cross_entropy_forward(x.data(), targets.data(), mean.data(), ce_tokens, vocab); },
        [&] { k::cross_entropy_backward(x.data(), targets.data(), mean.data(), 1.0f, dx.data(), ce_tokens, vocab); });
  }
}

// The step's own kernels, the optimizer update and the zeroing of the grads, touch
// state last touched a step ago: their buffers rotate out of cache, as a GEMM's weights
// do (calibrated warm, a step's AdamW over 3 MiB blocks measured 1.19x its prediction
// and the zeroing 2.9x: tiny-gpt, DP 2, ZeRO 0, this host, 2026-11-22). `n` parameters.
void add_step_kernel_points(std::vector<MemoryPoint>& out, long n, const SweepOptions& o) {
  constexpr double kF = sizeof(float);
  struct State {
    std::vector<float> params, grads, m, v;
    std::vector<kernels::bf16> weights16, grads16;  // mixed precision's model weights and grads
  };
  std::vector<State> sets(static_cast<std::size_t>(cold_sets(4 * sizeof(float) * static_cast<std::size_t>(n))));
  for (State& st : sets)
    st = {activation_like(n, 1), activation_like(n, 3, 0.01f), filled(n, 0), filled(n, 0),
          std::vector<kernels::bf16>(static_cast<std::size_t>(n)), stored<kernels::bf16>(activation_like(n, 3, 0.01f))};
  int i = 0, step = 0;
  auto next = [&]() -> State& { return sets[i = (i + 1) % static_cast<int>(sets.size())]; };
  auto add = [&](std::string_view kernel, double bytes, const std::function<void()>& call, bool half = false) {
    out.push_back({std::string(kernel), bytes, time_per_call(call, o.repeats, o.min_repeat_s), false, half});
  };
  // the bytes the simulator counts for the update, fp32 grads (models/optimizer_state.hpp)
  add(kernel_names::kAdamw, optimizer_update_bytes_per_param(Optimizer::adam, 4) * n, [&] {
    State& st = next();
    k::adamw_step(st.params.data(), st.grads.data(), st.m.data(), st.v.data(), n, ++step, k::AdamWConfig{});
  });
  add(kernel_names::kSgd, optimizer_update_bytes_per_param(Optimizer::sgd, 4) * n, [&] {
    State& st = next();
    k::sgd_step(st.params.data(), st.grads.data(), st.m.data(), n, k::SgdConfig{});
  });
  // a step's zeroing of the gradient buffer: n elements written
  add(kernel_names::kZero, kF * n, [&] {
    State& st = next();
    std::fill(st.grads.begin(), st.grads.end(), 0.0f);
  });
  // the executor's read of the grads for NaN/Inf before each update (exec/train/trainer.cpp
  // stop_if_not_finite): n elements read; every value is finite, so the scan runs to the end
  add(kernel_names::kFiniteCheck, kF * n, [&] {
    if (exec::has_inf_or_nan(next().grads.data(), static_cast<std::size_t>(n))) throw std::logic_error("finite grads");
  });
  // mixed precision: the updated fp32 masters copied into the model's 16-bit weights,
  // 4 bytes read and 2 written per parameter (exec/train/mixed_precision.hpp)
  add(kernel_names::kCast, 6.0 * n, [&] {
    State& st = next();
    exec::store_rounded(st.m.data(), st.weights16.data(), static_cast<std::size_t>(n));
  });
  // the same with bf16 grads (2 bytes each): a 16-bit run's update and zeroing
  add(
      kernel_names::kAdamw, optimizer_update_bytes_per_param(Optimizer::adam, 2) * n,
      [&] {
        State& st = next();
        k::adamw_step(st.params.data(), st.grads16.data(), st.m.data(), st.v.data(), n, ++step, k::AdamWConfig{});
      },
      true);
  add(
      kernel_names::kSgd, optimizer_update_bytes_per_param(Optimizer::sgd, 2) * n,
      [&] {
        State& st = next();
        k::sgd_step(st.params.data(), st.grads16.data(), st.m.data(), n, k::SgdConfig{});
      },
      true);
  add(kernel_names::kZero, 2.0 * n, [&] {
    State& st = next();
    std::fill(st.grads16.begin(), st.grads16.end(), kernels::bf16{0});
  }, true);
  add(
      kernel_names::kFiniteCheck, 2.0 * n,
      [&] {
        if (exec::has_inf_or_nan(next().grads16.data(), static_cast<std::size_t>(n)))
          throw std::logic_error("finite grads");
      },
      true);
}

}  // namespace

std::vector<float> compressed_grads(std::size_t n) { return activation_like(n, 3, 0.01f); }

std::vector<unsigned char> packed_grads(std::size_t n) {
  std::vector<unsigned char> wire(2 * exec::quantized_chunk_words(GradCompression::int8, n));
  exec::pack_quantized(compressed_grads(n).data(), n, GradCompression::int8, wire.data());
  return wire;
}

namespace {

// int8 gradient compression (exec/train/grad_compression.hpp): the residual added, the
// block-quantised values and the new residual, per value; counted as the simulator's
// quantise pass over the buffer, the fp32 value read and its int8 byte (with the block's
// fp32 scale) written (models/quantized_grads.hpp). The grads are a backward's, never zero:
// on the zeroed grads the step points leave behind every block's scale is 0 and the
// per-value divide and round are skipped (1.00M values: 2.69 ms on zeros, 3.95 ms on
// N(0, 0.01^2) grads, 2 ranks, this host, issue 61), which priced a DP-2 int8 step's
// gradient exchange 48% low.
void add_grad_compression_point(std::vector<MemoryPoint>& out, long n, const SweepOptions& o) {
  const auto values = static_cast<std::size_t>(n);
  const int sets = cold_sets(3 * sizeof(float) * values);  // the grads, the residual and the sent values
  std::vector<std::vector<float>> grads(static_cast<std::size_t>(sets), compressed_grads(values));
  std::vector<exec::GradCompressor> compressors;
  for (int j = 0; j < sets; ++j) compressors.emplace_back(GradCompression::int8, values);
  int i = 0;
  const Stats s = time_per_call(
      [&] {
        i = (i + 1) % sets;
        compressors[static_cast<std::size_t>(i)].compress(grads[static_cast<std::size_t>(i)].data(), values);
      },
      o.repeats, o.min_repeat_s);
  out.push_back({std::string(kernel_names::kQuantize),
                 (sizeof(float) + quantized_grad_bytes_per_value(GradCompression::int8)) * static_cast<double>(n), s,
                 false});
}

// int8 gradient compression's other half (exec/train/quantized_exchange.hpp add_dequantized):
// a rank's summed chunk gets a packed chunk received from another rank, dequantised, added.
// Counted as the simulator's dequantise pass (sim/training/zero_comm.cpp dequantize_pass_s),
// the fp32 sum and the int8 byte (with its block's scale) a value, on real blocks
// (packed_grads). Its own point: priced as a quantise pass it cost ~7x what it measures
// (5.4 ms packing, 0.9 ms widening and adding half of 3.36M values, 2 ranks, issue 61).
void add_grad_dequantize_point(std::vector<MemoryPoint>& out, long n, const SweepOptions& o) {
  const auto values = static_cast<std::size_t>(n);
  const double bytes = (sizeof(float) + quantized_grad_bytes_per_value(GradCompression::int8)) * static_cast<double>(n);
  const int sets = cold_sets(static_cast<std::size_t>(bytes));
  std::vector<std::vector<unsigned char>> wires(static_cast<std::size_t>(sets), packed_grads(values));
  std::vector<std::vector<float>> sums(static_cast<std::size_t>(sets), compressed_grads(values));
  int i = 0;
  const Stats s = time_per_call(
      [&] {
        i = (i + 1) % sets;
        const auto at = static_cast<std::size_t>(i);
        exec::add_dequantized(wires[at].data(), values, GradCompression::int8, sums[at].data());
      },
      o.repeats, o.min_repeat_s);
  out.push_back({std::string(kernel_names::kDequantize), bytes, s, false});
}

}  // namespace

namespace {

// One decode GEMM point: m rows against an n x k weight (compute_bench.hpp add_decode_gemm_points).
void add_decode_gemm_point(std::vector<MemoryPoint>& out, const SweepOptions& o, bool cached, int m, int outputs,
                           int inputs) {
  const std::size_t xs = static_cast<std::size_t>(m) * inputs, ws = static_cast<std::size_t>(outputs) * inputs,
                    ys = static_cast<std::size_t>(m) * outputs;
  const double bytes = sizeof(float) * static_cast<double>(xs + ws + ys);
  const int sets =
      cached ? std::max(1, static_cast<int>(o.cache_bytes / 2 / bytes)) : cold_sets(static_cast<std::size_t>(bytes));
  std::vector<std::vector<float>> x(sets, activation_like(xs, 8)), w(sets, activation_like(ws, 9, 0.02f)),
      y(sets, filled(ys));
  int i = 0;
  const Stats s = time_per_call(
      [&] {
        i = (i + 1) % sets;
        k::linear_forward(x[i].data(), w[i].data(), nullptr, y[i].data(), m, inputs, outputs);
      },
      o.repeats, o.min_repeat_s);
  out.push_back({std::string(cached ? kGemmCachedKernel : kGemmKernel), bytes, s, false});
}

}  // namespace

// The memory side of the GEMM roofline, where it binds: a decode's GEMMs of a few rows
// against a whole weight matrix (the executor's models' projections), forward as a
// decode runs them. "gemm": operands rotated out of cache, as a model larger than the
// cache streams them; "gemm_cached": rotated through half of `o.cache_bytes`, which the
// reuse sweep (cache_reuse.hpp) sets to the working set it measured still warm: a pass
// whose weights and KV cache fit in it finds them there step after step (on a shared VM
// the sysfs L3 is shared with other guests: 16 MiB in rotation ran as slowly as 64 MiB
// here, 5.5 MiB 2.9x faster). Bytes: A, B and C once.
// Below the projections, 4 rows only against the small weights (a TP-2 rank's routed expert,
// MLA's down and up projections, the router; 8-96 KiB, inside the L2): the curve's smallest
// point was else a 1-row call, Eigen's matrix-vector path at ~3x a 4-row call's bytes a
// second, and every smaller GEMM was priced at it (issue 61); the rows curve (cache_reuse.hpp)
// scales the 4-row price to other rows.
void add_decode_gemm_points(std::vector<MemoryPoint>& out, const SweepOptions& o, bool cached) {
  const std::vector<int> rows = o.quick ? std::vector<int>{4} : std::vector<int>{1, 4, 16};
  const std::vector<std::pair<int, int>> weights =  // (n outputs, k inputs)
      o.quick ? std::vector<std::pair<int, int>>{{1024, 256}}
              : std::vector<std::pair<int, int>>{{256, 256}, {512, 256}, {768, 256}, {1024, 256}, {1376, 256}, {256, 688}, {256, 1024},
                                                 // tiny-llama's on each of 2 TP ranks: proj, gate_up, down
                                                 {256, 128}, {688, 256}, {256, 344}};
  for (int m : rows)
    for (auto [n, k] : weights) add_decode_gemm_point(out, o, cached, m, n, k);
  if (o.quick) return;
  // tiny-moe's routed expert on a TP-2 rank (w1/w3, w2), tiny-mla's q_down, q_up, kv_down, the router
  for (auto [n, k] : std::vector<std::pair<int, int>>{{64, 256}, {256, 64}, {96, 256}, {192, 96}, {80, 256}, {8, 256}})
    add_decode_gemm_point(out, o, cached, 4, n, k);
}

std::vector<MemoryPoint> memory_sweep(const SweepOptions& o) {
  std::vector<MemoryPoint> out;
  add_decode_gemm_points(out, o, false);  // "gemm_cached": the reuse sweep's (cache_reuse.hpp)
  constexpr double kF = sizeof(float);
  for (long n : memory_sizes(o.quick)) {
    std::vector<float> x = filled(n), y = filled(n), z = filled(n);
    out.push_back({"copy", 2 * kF * n,
                   time_per_call([&] { std::memcpy(y.data(), x.data(), n * sizeof(float)); }, o.repeats, o.min_repeat_s)});
    out.push_back({"add", 3 * kF * n, time_per_call([&] {
                     for (long i = 0; i < n; ++i) z[i] = x[i] + y[i];
                   }, o.repeats, o.min_repeat_s)});
    add_kernel_points<float>(out, n, o);
    add_kernel_points<kernels::bf16>(out, n, o);
    add_step_kernel_points(out, n, o);
    add_grad_compression_point(out, n, o);
    add_grad_dequantize_point(out, n, o);
    // the offloaded optimizer's copies, from 256 KiB (a small shard) up (host_path.hpp)
    if (n >= (1L << 16)) add_host_copy_points(out, n, o);
  }
  return out;
}

namespace {

// MLA's absorbed decode step as tiny-mla's runs it on a TP rank (exec/model/decoder_mla.cpp
// mla_decode_attend): 4 sequences, 4 query heads over one latent row of 80 (kv_lora 64 +
// RoPE 16) that is K, its first 64 columns V, after `cached` tokens, caches rotated out of
// cache. Its rate per byte is its own: each row read serves 4 heads of 80 + 64 (issue 61:
// 35 us a layer measured against 21 priced at the GQA shapes' rate, 2-vCPU EPYC).
AttentionPoint mla_decode_point(int cached, const SweepOptions& o) {
  constexpr int kBatch = 4, kHeads = 4, kLatent = 80, kValue = 64;
  kernels::cpu::KvCacheAttentionShape s{kBatch, 1, cached, cached + 1, kHeads, 1, kLatent};
  s.v_head_dim = kValue;
  s.v_row_stride = kLatent;
  const std::size_t qn = static_cast<std::size_t>(kBatch) * kHeads * kLatent,
                    on = static_cast<std::size_t>(kBatch) * kHeads * kValue,
                    kvn = static_cast<std::size_t>(kBatch) * s.cache_rows * kLatent;
  struct Set {
    std::vector<float> q, cache, o;
  };
  std::vector<Set> sets(static_cast<std::size_t>(cold_sets((qn + on + kvn) * sizeof(float))));
  for (Set& set : sets) set = {activation_like(qn, 15), activation_like(kvn, 16), filled(on)};
  int i = 0;
  // the serving op list's absorbed count: 2 x (2 kv_lora + rope) a (query, key) pair and head
  const double flops = 2.0 * kBatch * (cached + 1.0) * kHeads * (2 * kValue + (kLatent - kValue));
  AttentionPoint p{kBatch,
                   1,
                   kHeads,
                   kLatent,
                   false,
                   flops,
                   time_per_call(
                       [&] {
                         Set& set = sets[i = (i + 1) % static_cast<int>(sets.size())];
                         k::kv_cache_attention_forward(set.q.data(), set.cache.data(), set.cache.data(), set.o.data(),
                                                       s);
                       },
                       o.repeats, o.min_repeat_s)};
  p.kv_cache = true, p.cached = cached, p.kv_heads = 1, p.v_head_dim = kValue;
  // the bytes that list counts: q (heads x latent), the output (heads x v) and the latent rows
  // read over cached + 1 and written for the new one
  p.bytes = sizeof(float) * (static_cast<double>(qn) + static_cast<double>(on) + kBatch * (cached + 2.0) * kLatent);
  return p;
}

// Serving attention over a KV cache: decode steps (one token after 31..255 cached ones)
// and prefills (32..128 tokens over an empty cache), 4 sequences, as the executor's
// inference cases run it: heads of 64 with and without GQA (tiny-gpt: 4 heads), and of 32
// with GQA (tiny-llama: 8 heads over 4 K/V heads, 4 over 2 on each of 2 TP ranks). A
// decode step's time per byte grows as the heads narrow (a score's exp and loops come
// per 2 x head_dim elements read): after 80 cached tokens, out of cache, heads of 64 read
// 3.1-3.4 GB/s, heads of 32 2.1-2.6 (this host, 2026-11-22), so both widths are measured.
void add_kv_cache_points(std::vector<AttentionPoint>& out, const SweepOptions& o) {
  struct Heads {
    int heads, kv_heads, head_dim;
  };
  const std::vector<Heads> layouts = {{4, 4, 64}, {4, 2, 64}, {8, 4, 32}, {4, 2, 32}};
  std::vector<std::pair<int, int>> passes;  // (new tokens, cached)
  for (int cached : o.quick ? std::vector<int>{63} : std::vector<int>{31, 63, 127, 255}) passes.push_back({1, cached});
  for (int n : o.quick ? std::vector<int>{64} : std::vector<int>{32, 64, 128}) passes.push_back({n, 0});
  for (auto [n, cached] : passes)
    for (const auto [heads, kv_heads, head_dim] : layouts) {
      kernels::cpu::KvCacheAttentionShape s{4, n, cached, cached + n, heads, kv_heads, head_dim};
      const std::size_t qn = static_cast<std::size_t>(s.batch) * n * s.heads * s.head_dim,
                        kvn = static_cast<std::size_t>(s.batch) * s.cache_rows * kv_heads * s.head_dim;
      // a layer's cache was last read a pass ago, every other layer's cache and weights
      // since: the calls rotate through sets out of cache, as the GEMMs' operands do
      // (warm, the decode's attention measured 1.9x its prediction: tiny-gpt, 2026-11-22)
      struct Set {
        std::vector<float> q, k, v, o;
      };
      std::vector<Set> sets(static_cast<std::size_t>(cold_sets((2 * qn + 2 * kvn) * sizeof(float))));
      for (Set& set : sets) set = {activation_like(qn, 12), activation_like(kvn, 13), activation_like(kvn, 14), filled(qn)};
      int i = 0;
      const double flops = 4.0 * s.batch * n * static_cast<double>(cached + n) * s.heads * s.head_dim;
      AttentionPoint p{s.batch, n, s.heads, s.head_dim, false, flops, time_per_call([&] {
                         Set& set = sets[i = (i + 1) % static_cast<int>(sets.size())];
                         k::kv_cache_attention_forward(set.q.data(), set.k.data(), set.v.data(), set.o.data(), s);
                       }, o.repeats, o.min_repeat_s)};
      p.kv_cache = true, p.cached = cached, p.kv_heads = kv_heads;
      p.bytes = sizeof(float) * (2.0 * static_cast<double>(qn) +
                                 2.0 * s.batch * (cached + 2.0 * n) * kv_heads * static_cast<double>(s.head_dim));
      out.push_back(p);
    }
  for (auto [n, cached] : passes)
    if (n == 1) out.push_back(mla_decode_point(cached, o));
}

}  // namespace

std::vector<AttentionPoint> attention_sweep(const SweepOptions& o) {
  std::vector<AttentionPoint> out;
  add_kv_cache_points(out, o);
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
      std::vector<float> q = activation_like(n, 4), kk = activation_like(n, 5), v = activation_like(n, 6),
                         out_t = filled(n), dout = activation_like(n, 7, 0.01f), dq = filled(n), dk = filled(n), dv = filled(n),
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
