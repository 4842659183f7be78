#include "exec/cuda/device_check.hpp"

#ifdef TWINSIM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstdio>
#endif

namespace twinsim::exec {
namespace {

void say(std::string* why, const std::string& text) {
  if (why != nullptr) *why = text;
}

}  // namespace

#ifdef TWINSIM_HAVE_CUDA

bool cuda_backend_built() { return true; }

bool cuda_device_available(std::string* why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    cudaGetLastError();  // reset the runtime's last-error state so later calls start clean
    std::string reason = status != cudaSuccess
                             ? std::string("the CUDA runtime reports ") + cudaGetErrorName(status) +
                                   " (" + cudaGetErrorString(status) + ")"
                             : std::string("the CUDA runtime sees 0 devices");
    say(why, "no GPU is present: " + reason + "; check nvidia-smi and CUDA_VISIBLE_DEVICES");
    return false;
  }
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    say(why, "a GPU is listed but cannot be opened (cudaGetDeviceProperties failed)");
    return false;
  }
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
  say(why, std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
               ", " + memory + ", " + std::to_string(count) + " device(s) visible");
  return true;
}

#else

bool cuda_backend_built() { return false; }

bool cuda_device_available(std::string* why) {
  say(why,
      "no GPU can be used: this build has no CUDA backend (nvcc was not found at configure "
      "time, or TWINSIM_CUDA=OFF); rebuild on a machine with the CUDA toolkit");
  return false;
}

#endif

std::string require_cuda_device() {
  std::string why;
  if (cuda_device_available(&why)) return why;
  throw DeviceUnavailableError(cuda_backend_built() ? DeviceUnavailableError::Reason::no_device
                                                    : DeviceUnavailableError::Reason::built_without_cuda,
                               why);
}

}  // namespace twinsim::exec
