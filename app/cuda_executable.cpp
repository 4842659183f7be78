#include "app/cuda_executable.hpp"

#include <filesystem>
#include <optional>

#include "app/child_process.hpp"
#include "app/hand_over.hpp"
#include "exec/cuda/device_check.hpp"

namespace twinsim {

void hand_over_to_cuda_executable() {
  const std::optional<std::filesystem::path> cuda = executable_beside_this_one("twinsim-cuda");
  if (!cuda) {
    exec::require_cuda_device();  // a build without CUDA says so, with its own reason
    throw exec::DeviceUnavailableError(
        exec::DeviceUnavailableError::Reason::built_without_cuda,
        "no twinsim-cuda beside " + self_executable().string() +
            ": the CUDA backend lives in that executable (build it: cmake --build BUILD --target twinsim-cuda)");
  }
  hand_over_to(*cuda);
}

}  // namespace twinsim
