#pragma once
// The element types tensors are stored in. Mixed-precision training keeps weights,
// gradients and activations in 16 bits and computes in fp32 (Micikevicius et al. 2018,
// "Mixed Precision Training" §3): a kernel loads each element with to_float, does its
// math in float, and rounds once with from_float<T> when it stores. bf16 and fp16 are
// bit patterns here, not arithmetic types, so no 16-bit arithmetic happens by accident.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/common/hd.hpp"

namespace twinsim::kernels {

struct bf16 {  // bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of an fp32)
  std::uint16_t bits;
};
struct fp16 {  // IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits
  std::uint16_t bits;
};

TWINSIM_HD inline std::uint32_t float_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
TWINSIM_HD inline float bits_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

TWINSIM_HD inline float to_float(float x) { return x; }
TWINSIM_HD inline float to_float(bf16 x) { return bits_float(static_cast<std::uint32_t>(x.bits) << 16); }
TWINSIM_HD inline float to_float(fp16 x) {
  const std::uint32_t sign = static_cast<std::uint32_t>(x.bits & 0x8000u) << 16;
  const std::uint32_t exp = (x.bits >> 10) & 0x1fu, mant = x.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf, nan
  // normal: rebias 15 -> 127; subnormal: mant * 2^-24 (exact in float)
  const float magnitude = exp != 0 ? bits_float(((exp + 112u) << 23) | (mant << 13)) : mant * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

// Rounding to nearest, ties to even (IEEE 754-2008 §4.3.1); inf and nan pass through.
TWINSIM_HD inline bf16 to_bf16(float x) {
  std::uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | ((u & 0xffffu) ? 0x40u : 0))};
  u += 0x7fffu + ((u >> 16) & 1u);  // round the dropped 16 bits
  return {static_cast<std::uint16_t>(u >> 16)};
}

TWINSIM_HD inline fp16 to_fp16(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(x);
  if (a != a) return {static_cast<std::uint16_t>(sign | 0x7e00u)};  // nan
  // binary16's largest is 65504; anything that rounds above it overflows (IEEE 754-2008 §7.4)
  if (a >= 65520.0f) return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (a < 6.103515625e-5f) {  // below 2^-14: subnormal, a multiple of 2^-24
    const float scaled = a * 16777216.0f;  // exact: a power-of-two scale
    return {static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)))};
  }
  // normal: keep 10 of fp32's 23 mantissa bits, ties to even; a carry into the exponent is right
  std::uint32_t m = float_bits(a);
  m += 0xfffu + ((m >> 13) & 1u);
  const std::uint32_t exp = (m >> 23) - 112u, mant = (m >> 13) & 0x3ffu;
  return {static_cast<std::uint16_t>(sign | (exp << 10) | mant)};
}

// from_float<T>: the store side of a kernel, generic over the storage type.
template <class T>
TWINSIM_HD inline T from_float(float x);
template <>
TWINSIM_HD inline float from_float<float>(float x) {
  return x;
}
template <>
TWINSIM_HD inline bf16 from_float<bf16>(float x) {
  return to_bf16(x);
}
template <>
TWINSIM_HD inline fp16 from_float<fp16>(float x) {
  return to_fp16(x);
}

}  // namespace twinsim::kernels
