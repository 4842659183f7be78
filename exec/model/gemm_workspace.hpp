#pragma once
// The fp32 scratch the backend's GEMM wants (the CPU one widens 16-bit operand tiles into
// it, kernels/cpu/gemm.hpp; KernelTable::gemm_workspace_floats),
// kept as cuBLAS keeps its workspace: allocated once per model from the rank's allocator,
// counted as `buffers` whatever the precision (PyTorch allocates cuBLAS's workspace for
// fp32 GEMMs too), and handed to the kernels for the model's lifetime.
#include "exec/model/tensor.hpp"

namespace twinsim::exec {

class GemmWorkspace {
 public:
  GemmWorkspace();   // allocates the workspace and installs it in the kernels
  ~GemmWorkspace();  // uninstalls it (if it is still the one installed)
  GemmWorkspace(const GemmWorkspace&) = delete;
  GemmWorkspace& operator=(const GemmWorkspace&) = delete;

 private:
  Tensor scratch_;
};

}  // namespace twinsim::exec
