#include "exec/train/mixed_precision.hpp"

#include <cmath>

#include "kernels/common/storage.hpp"

namespace twinsim::exec {

float round_to_bf16(float x) { return kernels::to_float(kernels::to_bf16(x)); }

float round_to_fp16(float x) { return kernels::to_float(kernels::to_fp16(x)); }

void round_to_storage(Dtype storage, float* data, std::size_t n) {
  if (storage == Dtype::bf16)
    for (std::size_t i = 0; i < n; ++i) data[i] = round_to_bf16(data[i]);
  else if (storage == Dtype::fp16)
    for (std::size_t i = 0; i < n; ++i) data[i] = round_to_fp16(data[i]);
}

template <class T>
void store_rounded(const float* in, T* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = kernels::from_float<T>(in[i]);
}

template <class T>
bool has_inf_or_nan(const T* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(kernels::to_float(data[i]))) return true;
  return false;
}

template void store_rounded<float>(const float*, float*, std::size_t);
template void store_rounded<kernels::bf16>(const float*, kernels::bf16*, std::size_t);
template void store_rounded<kernels::fp16>(const float*, kernels::fp16*, std::size_t);
template bool has_inf_or_nan<float>(const float*, std::size_t);
template bool has_inf_or_nan<kernels::bf16>(const kernels::bf16*, std::size_t);
template bool has_inf_or_nan<kernels::fp16>(const kernels::fp16*, std::size_t);

bool LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ = scale_ / 2.0f < 1.0f ? 1.0f : scale_ / 2.0f;
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= window_) {
    scale_ *= 2.0f;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace twinsim::exec
