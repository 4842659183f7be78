#include "models/dtype.hpp"

#include "models/checked_math.hpp"

namespace twinsim {

int dtype_bits(Dtype d) {
  switch (d) {
    case Dtype::fp32: return 32;
    case Dtype::tf32: return 32;  // stored as fp32; only the tensor-core math is 19-bit
    case Dtype::fp16: return 16;
    case Dtype::bf16: return 16;
    case Dtype::fp8: return 8;
    case Dtype::int8: return 8;
    case Dtype::int4: return 4;
    case Dtype::nvfp4:
    case Dtype::mxfp4: return 4;  // the E2M1 values; their block scales: scaled_bytes
  }
  return 32;
}

std::int64_t dtype_bytes(Dtype d, std::int64_t count) {
  return ceil_div(checked_mul(count, dtype_bits(d)), 8);
}

int fp4_block_size(Dtype d) {
  if (d == Dtype::nvfp4) return 16;
  if (d == Dtype::mxfp4) return 32;
  return 0;
}

bool is_fp4(Dtype d) { return fp4_block_size(d) != 0; }

std::int64_t scaled_bytes(Dtype d, std::int64_t count) {
  const std::int64_t bytes = dtype_bytes(d, count);
  return is_fp4(d) ? checked_add(bytes, ceil_div(count, fp4_block_size(d))) : bytes;
}

std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
    case Dtype::int4: return "int4";
    case Dtype::nvfp4: return "nvfp4";
    case Dtype::mxfp4: return "mxfp4";
  }
  return "?";
}

bool parse_dtype(std::string_view name, Dtype& out) {
  for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::int8,
                  Dtype::int4, Dtype::nvfp4, Dtype::mxfp4}) {
    if (to_string(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

}  // namespace twinsim
