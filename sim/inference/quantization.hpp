#pragma once
// What a serving weight format costs: the bytes a weight matrix occupies (and so the
// bytes a decode step reads), and the math type its GEMMs run in.
#include <cstdint>

#include "hardware/gpu_spec.hpp"
#include "models/dtype.hpp"

namespace twinsim {

// int4 weights carry one fp16 scale per group of 128 consecutive weights, as GPTQ
// (Frantar et al. 2023, §4 "grouping") and AWQ (Lin et al. 2024, §3) pack them.
constexpr std::int64_t kInt4GroupSize = 128;
constexpr std::int64_t kInt4ScaleBytes = 2;

// Bytes of `elements` weights of a linear layer stored as `weight_dtype`, scales included.
// fp8 and int8 use per-tensor or per-channel scales: negligible, not counted; nvfp4 / mxfp4
// one scale byte per block of 16 / 32 weights (scaled_bytes, models/dtype.hpp).
std::int64_t weight_matrix_bytes(Dtype weight_dtype, std::int64_t elements);

// The type a GEMM with these weights multiplies in on this GPU:
//  * fp8 weights run FP8 Tensor Core GEMMs (W8A8, activations quantized on the fly) where
//    the GPU has them (Hopper: H100 datasheet), else weight-only dequantized to fp16
//    (vLLM's Marlin FP8 kernels on Ampere);
//  * int8 runs INT8 Tensor Core GEMMs (W8A8, SmoothQuant: Xiao et al. 2023, §4);
//  * int4 is weight-only (W4A16): dequantized in registers, fp16 math (AWQ §4, Marlin);
//  * nvfp4 / mxfp4 run Blackwell's FP4 Tensor Core GEMMs (W4A4: TensorRT-LLM's NVFP4
//    checkpoints from ModelOpt, activations quantized on the fly); refused on GPUs without
//    them (scenario/validate.cpp);
//  * fp32/fp16/bf16 multiply in their own type.
Dtype gemm_math_dtype(const GpuSpec& gpu, Dtype weight_dtype);

// Activations between ops: 16-bit (fp32 when the whole model is served in fp32).
Dtype serving_activation_dtype(Dtype weight_dtype);

}  // namespace twinsim
