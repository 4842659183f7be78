#pragma once
// Block-quantised data-parallel gradients (plan.gradient_compression int8 / int4): the
// bytes one rank puts on the wire, one home for the simulator's price
// (sim/training/zero_comm.cpp) and the executor's exchange (exec/train/quantized_exchange.hpp).
// Values are grouped in blocks of 2,048 with one fp32 scale each (absmax / 127 for int8,
// / 7 for int4), as DeepSpeed's ZeRO++ quantizer groups a tensor (Wang et al. 2023, §3.1);
// int4 values go two to a byte.
#include <cstdint>

#include "models/plan.hpp"

namespace twinsim {

inline constexpr std::int64_t kGradQuantBlock = 2048;  // values per fp32 scale

// Bits of one value on the wire: 8 for int8, 4 for int4, 0 for any other compression.
constexpr int quantized_grad_bits(GradCompression kind) {
  return kind == GradCompression::int8 ? 8 : kind == GradCompression::int4 ? 4 : 0;
}

// Bytes of `values` consecutive gradient values quantised from a block boundary: the values
// (int4 two a byte, rounded up) and one 4-byte scale per started block.
constexpr std::int64_t quantized_grad_bytes(GradCompression kind, std::int64_t values) {
  const std::int64_t blocks = (values + kGradQuantBlock - 1) / kGradQuantBlock;
  return (values * quantized_grad_bits(kind) + 7) / 8 + 4 * blocks;
}

// The same per value of a buffer of whole blocks (1 + 4/2048 for int8, 0.5 + 4/2048 for int4).
constexpr double quantized_grad_bytes_per_value(GradCompression kind) {
  return static_cast<double>(quantized_grad_bytes(kind, kGradQuantBlock)) / static_cast<double>(kGradQuantBlock);
}

}  // namespace twinsim
