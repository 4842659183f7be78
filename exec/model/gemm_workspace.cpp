#include "exec/model/gemm_workspace.hpp"

#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

namespace {
float* installed = nullptr;  // the workspace the kernels use now (one model thread per process)
}

GemmWorkspace::GemmWorkspace()
    : scratch_(Tensor::uninitialized(MemCategory::buffers, current_backend().kernels().gemm_workspace_floats())) {
  installed = scratch_.data();
  current_backend().kernels().set_gemm_workspace(installed);
}

GemmWorkspace::~GemmWorkspace() {
  if (installed != scratch_.data()) return;  // a later model installed its own
  installed = nullptr;
  current_backend().kernels().set_gemm_workspace(nullptr);  // the kernels' own static buffer from now on
}

}  // namespace twinsim::exec
