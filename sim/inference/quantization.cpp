#include "sim/inference/quantization.hpp"

#include "models/checked_math.hpp"

namespace twinsim {

std::int64_t weight_matrix_bytes(Dtype weight_dtype, std::int64_t elements) {
  std::int64_t bytes = scaled_bytes(weight_dtype, elements);  // fp4's block scales included
  if (weight_dtype == Dtype::int4) bytes = checked_add(bytes, kInt4ScaleBytes * ceil_div(elements, kInt4GroupSize));
  return bytes;
}

Dtype gemm_math_dtype(const GpuSpec& gpu, Dtype weight_dtype) {
  switch (weight_dtype) {
    case Dtype::fp8: return gpu.has_peak(Dtype::fp8) ? Dtype::fp8 : Dtype::fp16;
    case Dtype::int8: return gpu.has_peak(Dtype::int8) ? Dtype::int8 : Dtype::fp16;
    case Dtype::int4: return Dtype::fp16;
    case Dtype::tf32: return Dtype::tf32;
    case Dtype::fp32: return gpu.has_peak(Dtype::fp32) ? Dtype::fp32 : Dtype::fp16;
    default: return weight_dtype;
  }
}

Dtype serving_activation_dtype(Dtype weight_dtype) {
  return weight_dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::fp16;
}

}  // namespace twinsim
