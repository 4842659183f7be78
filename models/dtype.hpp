#pragma once
// Number formats a plan can use for weights, activations, KV cache and training.
#include <cstdint>
#include <string>
#include <string_view>

namespace twinsim {

// nvfp4 / mxfp4: Blackwell's block-scaled 4-bit floats (E2M1 values), each block of values
// along a GEMM's K sharing one scale (fp4_block_size, scaled_bytes).
enum class Dtype { fp32, tf32, fp16, bf16, fp8, int8, int4, nvfp4, mxfp4 };

// Storage size in bits (int4 packs two values per byte).
int dtype_bits(Dtype d);

// Bytes for `count` values of this type, rounded up to whole bytes.
std::int64_t dtype_bytes(Dtype d, std::int64_t count);

std::string_view to_string(Dtype d);

// The values sharing one scale in a block-scaled format, 0 for the others. MXFP4 (OCP
// Microscaling Formats v1.0, §5.3): 32 E2M1 values and one E8M0 scale; NVFP4 (NVIDIA,
// "Introducing NVFP4", 2025; Transformer Engine's NVFP4BlockScaling): 16 E2M1 values and one
// E4M3 scale, plus one fp32 scale for the whole tensor.
int fp4_block_size(Dtype d);
bool is_fp4(Dtype d);

// Bytes of `count` values with their block scales (one byte a block); the per-tensor fp32
// scale of NVFP4 is left out (4 bytes a tensor). Other types: dtype_bytes.
std::int64_t scaled_bytes(Dtype d, std::int64_t count);

// Parses "fp32", "bf16", ... ; returns false on an unknown name.
bool parse_dtype(std::string_view name, Dtype& out);

}  // namespace twinsim
