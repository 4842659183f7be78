#pragma once
// Child processes (mpirun, python3, twinsim itself) started from an argument vector with
// posix_spawnp: no shell ever parses the user's paths, so a space or a quote in one is
// just part of the name.
#include <filesystem>
#include <string>
#include <vector>

namespace twinsim {

// Where a child's output goes; an empty path leaves that stream as this process's own.
// stderr_to_stdout sends stderr wherever stdout goes (`2>&1`).
struct ChildOutput {
  std::filesystem::path stdout_path, stderr_path;
  bool stderr_to_stdout = false;
};

// Runs argv[0] (searched on PATH) with argv, waits, and returns its exit status (128 + the
// signal's number if a signal ended it). Throws std::runtime_error when it cannot start.
int run_child(const std::vector<std::string>& argv, const ChildOutput& output = {});

// The start of an argument vector that runs `ranks` MPI processes (Open MPI's mpirun, more
// ranks than cores allowed; as root with --allow-run-as-root, which Open MPI otherwise
// demands, since containers often run as root). Append the program and its arguments.
std::vector<std::string> mpirun_argv(int ranks);

// argv as a person would type it (each argument quoted where it needs to be), for messages.
std::string describe_command(const std::vector<std::string>& argv);

// This binary's own path (/proc/self/exe).
std::filesystem::path self_executable();

// A file the installed tree keeps beside the binary, PREFIX/share/twinsim/NAME for the
// binary PREFIX/bin/twinsim (`cmake --install`), and likewise BUILD/share/twinsim/NAME for
// BUILD/app/twinsim (the build copies it there). Throws, naming the place looked at, when
// it is absent.
std::filesystem::path installed_resource(const std::string& name);

}  // namespace twinsim
