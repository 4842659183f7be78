#include "exec/train/grad_compression.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/common/storage.hpp"

namespace twinsim::exec {

void quantize_dequantize(const float* in, float* out, std::size_t n, GradCompression kind, double topk_ratio) {
  if (kind == GradCompression::none) {
    if (out != in) std::copy_n(in, n, out);
    return;
  }
  if (kind == GradCompression::topk) {
    const auto k = std::min<std::size_t>(n, static_cast<std::size_t>(std::ceil(topk_ratio * static_cast<double>(n))));
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    const auto larger = [&](std::size_t a, std::size_t b) {
      const float x = std::fabs(in[a]), y = std::fabs(in[b]);
      return x != y ? x > y : a < b;
    };
    std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), larger);
    std::vector<float> kept(k);
    for (std::size_t j = 0; j < k; ++j) kept[j] = in[order[j]];
    std::fill_n(out, n, 0.0f);
    for (std::size_t j = 0; j < k; ++j) out[order[j]] = kept[j];
    return;
  }
  constexpr auto block = static_cast<std::size_t>(kGradQuantBlock);
  for (std::size_t lo = 0; lo < n; lo += block) {
    const std::size_t hi = std::min(n, lo + block);
    const float scale = block_scale(in + lo, hi - lo, kind);
    for (std::size_t i = lo; i < hi; ++i) out[i] = quantized_step(in[i], scale, kind) * scale;
  }
}

namespace {
float largest_step(GradCompression kind) { return kind == GradCompression::int8 ? 127.0f : 7.0f; }  // symmetric
}  // namespace

float block_scale(const float* in, std::size_t n, GradCompression kind) {
  float absmax = 0;
  for (std::size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(in[i]));
  return absmax / largest_step(kind);
}

float quantized_step(float value, float scale, GradCompression kind) {
  const float qmax = largest_step(kind);
  return scale > 0 ? std::clamp(std::nearbyint(value / scale), -qmax, qmax) : 0.0f;
}

GradCompressor::GradCompressor(GradCompression kind, std::size_t n, double topk_ratio)
    : kind_(kind), topk_ratio_(topk_ratio),
      residual_(kind == GradCompression::none ? Tensor() : Tensor(MemCategory::grads, n)) {}

template <class T>
void GradCompressor::compress(T* g, std::size_t n, std::size_t chunk) {
  if (!active()) return;
  if (n != residual_.size()) throw std::logic_error("gradient compression: the buffer's size changed");
  float* r = residual_.data();
  for (std::size_t i = 0; i < n; ++i) r[i] += kernels::to_float(g[i]);  // the value to send
  sent_.resize(n);
  const std::size_t step = chunk > 0 && kind_ != GradCompression::topk ? chunk : n;
  for (std::size_t lo = 0; lo < n; lo += step)
    quantize_dequantize(r + lo, sent_.data() + lo, std::min(step, n - lo), kind_, topk_ratio_);
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = kernels::from_float<T>(sent_[i]);
    r[i] -= kernels::to_float(g[i]);  // what this step did not send (storage rounding included)
  }
}

template void GradCompressor::compress<float>(float*, std::size_t, std::size_t);
template void GradCompressor::compress<kernels::bf16>(kernels::bf16*, std::size_t, std::size_t);
template void GradCompressor::compress<kernels::fp16>(kernels::fp16*, std::size_t, std::size_t);

}  // namespace twinsim::exec
