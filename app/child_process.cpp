#include "app/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace twinsim {

namespace {

// posix_spawn's file actions, freed however the spawn ends.
struct FileActions {
  posix_spawn_file_actions_t actions;
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
};

}  // namespace

int run_child(const std::vector<std::string>& argv, const ChildOutput& output) {
  if (argv.empty()) throw std::invalid_argument("run_child: no program to run");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  FileActions files;
  constexpr int kWrite = O_WRONLY | O_CREAT | O_TRUNC;
  if (!output.stdout_path.empty())
    posix_spawn_file_actions_addopen(&files.actions, STDOUT_FILENO, output.stdout_path.c_str(), kWrite, 0644);
  if (output.stderr_to_stdout)
    posix_spawn_file_actions_adddup2(&files.actions, STDOUT_FILENO, STDERR_FILENO);
  else if (!output.stderr_path.empty())
    posix_spawn_file_actions_addopen(&files.actions, STDERR_FILENO, output.stderr_path.c_str(), kWrite, 0644);

  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &files.actions, nullptr, args.data(), environ);
  if (err != 0)
    throw std::runtime_error("cannot start " + describe_command(argv) + ": " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waiting for " + describe_command(argv) + ": " + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::vector<std::string> mpirun_argv(int ranks) {
  std::vector<std::string> argv{"mpirun", "-np", std::to_string(ranks), "--oversubscribe"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  return argv;
}

std::string describe_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                         "-_./=:,+@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';  // POSIX shell quoting: a quote inside becomes '\''
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::filesystem::path self_executable() {
  const std::string path = std::filesystem::read_symlink("/proc/self/exe").string();
  // Linux names a binary replaced on disk since it started "PATH (deleted)": a child started from
  // that name fails later with a puzzling mpirun message (a rebuild during `calibrate`, 2026-12-06)
  const std::string deleted = " (deleted)";
  if (path.ends_with(deleted))
    throw std::runtime_error(path.substr(0, path.size() - deleted.size()) +
                             " was replaced (rebuilt?) while this command ran: run the command again");
  return path;
}

std::filesystem::path installed_resource(const std::string& name) {
  const std::filesystem::path path = self_executable().parent_path().parent_path() / "share" / "twinsim" / name;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("missing " + path.string() + ": this twinsim binary's installation lacks " + name +
                             " (`cmake --install` puts it there; a build tree has it under BUILD/share/twinsim)");
  return path;
}

}  // namespace twinsim
