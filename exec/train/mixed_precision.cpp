#include "exec/train/mixed_precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace twinsim::exec {

float round_to_bf16(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // inf or nan
  // keep the top 16 bits, rounding the dropped 16 to nearest, ties to even
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

float round_to_fp16(float x) {
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  // binary16: max 65504; a value that rounds above it overflows (IEEE 754-2008 §7.4)
  if (a >= 65520.0f) return std::copysign(INFINITY, x);
  int exp;
  std::frexp(a, &exp);  // a = f * 2^exp, f in [0.5, 1)
  // spacing of fp16 numbers near a: 2^(exp - 11) for normals, 2^-24 for subnormals
  const int e = exp - 11 < -24 ? -24 : exp - 11;
  const float step = std::ldexp(1.0f, e);
  return std::copysign(std::nearbyint(a / step) * step, x);  // nearbyint: ties to even
}

void round_to_storage(Dtype storage, float* data, std::size_t n) { store_rounded(storage, data, data, n); }

void store_rounded(Dtype storage, const float* in, float* out, std::size_t n) {
  if (storage == Dtype::bf16)
    for (std::size_t i = 0; i < n; ++i) out[i] = round_to_bf16(in[i]);
  else if (storage == Dtype::fp16)
    for (std::size_t i = 0; i < n; ++i) out[i] = round_to_fp16(in[i]);
  else if (in != out)
    std::copy_n(in, n, out);
}

bool has_inf_or_nan(const float* data, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(data[i])) return true;
  return false;
}

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
