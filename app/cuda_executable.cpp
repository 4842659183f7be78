#include "app/cuda_executable.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/child_process.hpp"
#include "exec/cuda/device_check.hpp"

namespace twinsim {

namespace {
std::vector<std::string>& command_line() {
  static std::vector<std::string> arguments;
  return arguments;
}

// `twinsim-cuda` beside this binary, when it is there.
std::optional<std::filesystem::path> cuda_executable_beside_this_one() {
  const std::filesystem::path path = self_executable().parent_path() / "twinsim-cuda";
  if (::access(path.c_str(), X_OK) != 0) return std::nullopt;
  return path;
}

}  // namespace

void remember_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

void hand_over_to_cuda_executable() {
  const std::optional<std::filesystem::path> cuda = cuda_executable_beside_this_one();
  if (!cuda) {
    exec::require_cuda_device();  // a build without CUDA says so, with its own reason
    throw exec::DeviceUnavailableError(
        exec::DeviceUnavailableError::Reason::built_without_cuda,
        "no twinsim-cuda beside " + self_executable().string() +
            ": the CUDA backend lives in that executable (build it: cmake --build BUILD --target twinsim-cuda)");
  }
  std::vector<std::string> arguments = command_line();
  if (arguments.empty()) throw std::runtime_error("--device cuda: the command line was not kept (main must keep it)");
  arguments[0] = cuda->string();
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  ::execv(cuda->c_str(), argv.data());
  throw std::runtime_error("--device cuda: cannot start " + cuda->string() + ": " + std::strerror(errno));
}

}  // namespace twinsim
