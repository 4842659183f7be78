#pragma once
// Which GPU generation's instructions a kernel was built for: the GPU's own (cuBLAS, today's
// engines) or Ampere's (sm80: mma.sync fed by cp.async, no wgmma or TMA), as an engine that
// ships only CUTLASS 2.x kernels runs them on a newer GPU (GpuSpec::sm80_gemm_scale).

namespace twinsim {

enum class KernelGeneration { native, sm80 };

}  // namespace twinsim
