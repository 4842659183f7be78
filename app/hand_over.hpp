#pragma once
// One command line, three executables built beside each other (app/CMakeLists.txt):
//   twinsim           the simulator's commands; starts in milliseconds and builds without
//                     the executor (scripts/run-default.sh builds it alone)
//   twinsim-executor  every command, the executor's too (run, calibrate, validate,
//                     checkpoint): `twinsim` hands those over to it
//   twinsim-cuda      every command plus the CUDA backend: `run --device cuda` hands over
// A hand-over replaces this process (execv) with the other executable and the same
// arguments, before MPI starts: under mpirun each rank does the same.
#include <filesystem>
#include <optional>
#include <string>

namespace twinsim {

// Kept by main() so that a command can hand the same arguments over.
void remember_command_line(int argc, char** argv);

// NAME beside this binary (BUILD/app/NAME, or PREFIX/bin/NAME once installed), when it is
// there and executable.
std::optional<std::filesystem::path> executable_beside_this_one(const std::string& name);

// Replaces this process by `executable` with the remembered arguments; argv[0] stays as
// it was typed, so messages and usage lines still say `twinsim`. Never returns: throws
// std::runtime_error when exec fails.
[[noreturn]] void hand_over_to(const std::filesystem::path& executable);

}  // namespace twinsim
