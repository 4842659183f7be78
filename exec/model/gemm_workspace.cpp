#include "exec/model/gemm_workspace.hpp"

#include "kernels/cpu/gemm.hpp"

namespace twinsim::exec {

namespace {
float* installed = nullptr;  // the workspace the kernels use now (one model thread per process)
}

GemmWorkspace::GemmWorkspace() : scratch_(Tensor::uninitialized(MemCategory::buffers, kernels::cpu::kGemmWorkspaceFloats)) {
  installed = scratch_.data();
  kernels::cpu::set_gemm_workspace(installed);
}

GemmWorkspace::~GemmWorkspace() {
  if (installed != scratch_.data()) return;  // a later model installed its own
  installed = nullptr;
  kernels::cpu::set_gemm_workspace(nullptr);  // the kernels' own static buffer from now on
}

}  // namespace twinsim::exec
