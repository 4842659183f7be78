#include "app/hand_over.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "app/child_process.hpp"

namespace twinsim {

namespace {
std::vector<std::string>& command_line() {
  static std::vector<std::string> arguments;
  return arguments;
}
}  // namespace

void remember_command_line(int argc, char** argv) { command_line().assign(argv, argv + argc); }

std::optional<std::filesystem::path> executable_beside_this_one(const std::string& name) {
  const std::filesystem::path path = self_executable().parent_path() / name;
  if (::access(path.c_str(), X_OK) != 0) return std::nullopt;
  return path;
}

void hand_over_to(const std::filesystem::path& executable) {
  std::vector<std::string> arguments = command_line();
  if (arguments.empty())
    throw std::runtime_error("cannot hand over to " + executable.string() + ": main did not keep the command line");
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  ::execv(executable.c_str(), argv.data());
  throw std::runtime_error("cannot start " + executable.string() + ": " + std::strerror(errno));
}

}  // namespace twinsim
