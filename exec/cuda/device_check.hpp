#pragma once
// Is there a GPU this process can use? Built in every configuration (with or without
// CUDA), so the executor's `--device cuda` and the GPU tests can always ask.
#include <stdexcept>
#include <string>

namespace twinsim::exec {

// True when this build has the CUDA backend and the CUDA runtime sees at least one
// device. Otherwise false, and *why (when not null) says so in one sentence, e.g.
// "no GPU is present: the CUDA runtime reports cudaErrorNoDevice (no CUDA-capable
// device is detected); check nvidia-smi and CUDA_VISIBLE_DEVICES". On success *why names
// the device ("NVIDIA H100 80GB HBM3, sm_90, 79.1 GiB, 1 device(s) visible").
bool cuda_device_available(std::string* why = nullptr);

// Whether this build has the CUDA backend at all (nvcc found at configure time).
bool cuda_backend_built();

// `--device cuda` asked for a GPU this process cannot use. what() names the option, the
// value and why, e.g. "--device cuda: no GPU is present: the CUDA runtime reports ...".
class DeviceUnavailableError : public std::runtime_error {
 public:
  enum class Reason { built_without_cuda, no_device };
  DeviceUnavailableError(Reason reason, const std::string& why)
      : std::runtime_error("--device cuda: " + why), reason_(reason) {}
  Reason reason() const { return reason_; }

 private:
  Reason reason_;
};

// Returns the device's description (cuda_device_available's *why), or throws
// DeviceUnavailableError with the reason.
std::string require_cuda_device();

}  // namespace twinsim::exec
