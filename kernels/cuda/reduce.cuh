#pragma once
// Warp and block reductions for the CUDA kernels (device code only; include from .cu).
// Butterfly shuffles leave the result in every lane (CUDA Programming Guide, "Warp
// Shuffle Functions", the __shfl_xor_sync reduction example).

namespace twinsim::kernels::cuda {

constexpr int kWarp = 32;

__device__ inline float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. `scratch` is 32 floats of shared memory, reusable after the call returns.
__device__ inline float block_sum(float v, float* scratch) {
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* scratch) {
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace twinsim::kernels::cuda
