#pragma once
// The element types tensors are stored in. Mixed-precision training keeps weights,
// gradients and activations in 16 bits and computes in fp32 (Micikevicius et al. 2018,
// "Mixed Precision Training" §3): a kernel loads each element with to_float, does its
// math in float, and rounds once with from_float<T> when it stores. bf16 and fp16 are
// bit patterns here, not arithmetic types, so no 16-bit arithmetic happens by accident.
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

// Selects a where mask is all ones, b where it is zero: the conversions below are written
// without branches so that GCC vectorises the loops that call them (with branches the
// GEMM's tile loops ran one element at a time and fp16 GEMMs took about twice as long as
// bf16 ones, bench_gemm's BM_GemmStorage, 2026-11-22).
TWINSIM_HD inline std::uint32_t select_bits(std::uint32_t mask, std::uint32_t a, std::uint32_t b) {
  return (a & mask) | (b & ~mask);
}
TWINSIM_HD inline std::uint32_t mask_of(bool x) { return 0u - static_cast<std::uint32_t>(x); }

TWINSIM_HD inline float to_float(float x) { return x; }
TWINSIM_HD inline float to_float(bf16 x) { return bits_float(static_cast<std::uint32_t>(x.bits) << 16); }
TWINSIM_HD inline float to_float(fp16 x) {
  const std::uint32_t h = x.bits, exp = h & 0x7c00u;
  const std::uint32_t body = (h & 0x7fffu) << 13;     // exponent and mantissa in fp32's places
  const std::uint32_t normal = body + (112u << 23);    // rebias 15 -> 127
  const std::uint32_t special = body | 0x7f800000u;    // inf, nan with its payload
  // subnormal mant * 2^-24 = (2^-14 + mant * 2^-24) - 2^-14, both exact fp32 normals, so a
  // denormals-are-zero FPU mode cannot flush it
  const std::uint32_t subnormal = float_bits(bits_float(body + (113u << 23)) - 0x1p-14f);
  std::uint32_t magnitude = select_bits(mask_of(exp == 0), subnormal, normal);
  magnitude = select_bits(mask_of(exp == 0x7c00u), special, magnitude);
  return bits_float(magnitude | ((h & 0x8000u) << 16));
}

// Rounding to nearest, ties to even (IEEE 754-2008 §4.3.1); inf passes, a nan stays a nan.
TWINSIM_HD inline bf16 to_bf16(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round the dropped 16 bits
  const std::uint32_t special = (u >> 16) | (mask_of((u & 0xffffu) != 0) & 0x40u);  // keep a nan a nan
  return {static_cast<std::uint16_t>(select_bits(mask_of((u & 0x7f800000u) == 0x7f800000u), special, rounded))};
}

// F. Giesen's float_to_half_fast3_rtne ("half to float done quic", 2016), with masks.
TWINSIM_HD inline fp16 to_fp16(float x) {
  const std::uint32_t u = float_bits(x), a = u & 0x7fffffffu;
  // normal: round the 13 dropped bits to nearest even, then rebias 127 -> 15 (a carry into
  // the exponent is right)
  const std::uint32_t normal = ((a + 0xfffu + ((a >> 13) & 1u)) >> 13) - (112u << 10);
  // below 2^-14: adding 0.5 leaves a multiple of 2^-24 rounded to nearest even (the ulp of
  // [0.5, 1)), whose low mantissa bits are the fp16 subnormal
  const std::uint32_t subnormal = float_bits(bits_float(a) + 0.5f) - 0x3f000000u;
  std::uint32_t h = select_bits(mask_of(a < 0x38800000u), subnormal, normal);
  // binary16's largest is 65504; anything that rounds above it overflows (IEEE 754-2008 §7.4)
  h = select_bits(mask_of(a >= 0x477ff000u), 0x7c00u, h);
  h = select_bits(mask_of(a > 0x7f800000u), 0x7e00u, h);  // nan
  return {static_cast<std::uint16_t>(h | ((u >> 16) & 0x8000u))};
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
