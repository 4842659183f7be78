#pragma once
// The fp32 scratch the CPU GEMM widens 16-bit operand tiles into (kernels/cpu/gemm.hpp),
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
