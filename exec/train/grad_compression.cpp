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
  const float qmax = kind == GradCompression::int8 ? 127.0f : 7.0f;  // symmetric signed range
  for (std::size_t lo = 0; lo < n; lo += kGradQuantBlock) {
    const std::size_t hi = std::min(n, lo + kGradQuantBlock);
    float absmax = 0;
    for (std::size_t i = lo; i < hi; ++i) absmax = std::max(absmax, std::fabs(in[i]));
    const float scale = absmax / qmax;
    for (std::size_t i = lo; i < hi; ++i) {
      const float q = scale > 0 ? std::clamp(std::nearbyint(in[i] / scale), -qmax, qmax) : 0.0f;
      out[i] = q * scale;
    }
  }
}

GradCompressor::GradCompressor(GradCompression kind, std::size_t n, double topk_ratio)
    : kind_(kind), topk_ratio_(topk_ratio),
      residual_(kind == GradCompression::none ? Tensor() : Tensor(MemCategory::grads, n)) {}

template <class T>
void GradCompressor::compress(T* g, std::size_t n) {
  if (!active()) return;
  if (n != residual_.size()) throw std::logic_error("gradient compression: the buffer's size changed");
  float* r = residual_.data();
  for (std::size_t i = 0; i < n; ++i) r[i] += kernels::to_float(g[i]);  // the value to send
  sent_.resize(n);
  quantize_dequantize(r, sent_.data(), n, kind_, topk_ratio_);
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = kernels::from_float<T>(sent_[i]);
    r[i] -= kernels::to_float(g[i]);  // what this step did not send (storage rounding included)
  }
}

template void GradCompressor::compress<float>(float*, std::size_t);
template void GradCompressor::compress<kernels::bf16>(kernels::bf16*, std::size_t);
template void GradCompressor::compress<kernels::fp16>(kernels::fp16*, std::size_t);

}  // namespace twinsim::exec
