#pragma once
// `twinsim run --device cuda` runs in a third executable, `twinsim-cuda`, built beside
// `twinsim` whenever the build has CUDA (app/hand_over.hpp). Linking cuBLAS, cuBLASLt and
// NCCL into every command cost each start-up about 26,000 page faults (`twinsim --version`
// went from under 10 ms to about 100 ms), so only the executable that needs them maps them.

namespace twinsim {

// Replaces this process by `twinsim-cuda` with the same arguments (before MPI starts, so
// under mpirun each rank does the same). Never returns: throws DeviceUnavailableError when
// there is no `twinsim-cuda` beside this binary, std::runtime_error when exec fails.
[[noreturn]] void hand_over_to_cuda_executable();

}  // namespace twinsim
