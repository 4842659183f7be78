#pragma once
// TWINSIM_HD marks per-element math that CPU kernels and (later) CUDA kernels share,
// so the CPU tests exercise exactly the formulas the GPU will run.
#ifdef __CUDACC__
#define TWINSIM_HD __host__ __device__
#else
#define TWINSIM_HD
#endif
