#pragma once
// `twinsim run --device cuda` runs in a second executable, `twinsim-cuda`, built beside
// `twinsim` whenever the build has CUDA. Linking cuBLAS, cuBLASLt and NCCL into every
// command cost each start-up about 26,000 page faults (`twinsim --version` went from under
// 10 ms to about 100 ms), so only the executable that needs them maps them.

namespace twinsim {

// Kept by main() so that `run --device cuda` can hand the same arguments over.
void remember_command_line(int argc, char** argv);

// Replaces this process by `twinsim-cuda` with the same arguments (before MPI starts, so
// under mpirun each rank does the same). Never returns: throws DeviceUnavailableError when
// there is no `twinsim-cuda` beside this binary, std::runtime_error when exec fails.
[[noreturn]] void hand_over_to_cuda_executable();

}  // namespace twinsim
