#pragma once
// Is there a GPU this process can use? Built in every configuration (with or without
// CUDA), so the executor's `--device cuda` and the GPU tests can always ask.
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

}  // namespace twinsim::exec
