#pragma once
// Byte and FLOP counts of 10-trillion-parameter models on 100,000 GPUs overflow
// careless 64-bit arithmetic; these helpers stay exact or throw.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace twinsim {

struct OverflowError : std::overflow_error {
  using std::overflow_error::overflow_error;
};

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw OverflowError("integer overflow: " + std::to_string(a) + " * " + std::to_string(b) +
                        " does not fit in 64 bits");
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw OverflowError("integer overflow: " + std::to_string(a) + " + " + std::to_string(b) +
                        " does not fit in 64 bits");
  return r;
}

// Ceiling division for positive operands (shards of a tensor split n ways).
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace twinsim
