#pragma once
// Number formats a plan can use for weights, activations, KV cache and training.
#include <cstdint>
#include <string>
#include <string_view>

namespace twinsim {

enum class Dtype { fp32, tf32, fp16, bf16, fp8, int8, int4 };

// Storage size in bits (int4 packs two values per byte).
int dtype_bits(Dtype d);

// Bytes for `count` values of this type, rounded up to whole bytes.
std::int64_t dtype_bytes(Dtype d, std::int64_t count);

std::string_view to_string(Dtype d);

// Parses "fp32", "bf16", ... ; returns false on an unknown name.
bool parse_dtype(std::string_view name, Dtype& out);

}  // namespace twinsim
