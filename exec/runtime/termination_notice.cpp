#include "exec/runtime/termination_notice.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace twinsim::exec {

namespace {

// Formatted when installed: a signal handler may only call async-signal-safe functions
// (write, _exit), not format text.
char notice[160];
int notice_length = 0;

extern "C" void on_sigterm(int) {
  if (notice_length > 0) (void)!::write(STDERR_FILENO, notice, static_cast<std::size_t>(notice_length));
  ::_exit(128 + SIGTERM);
}

}  // namespace

void install_termination_notice(int world_rank) {
  notice_length = std::snprintf(notice, sizeof notice,
                                "rank %d: ended by SIGTERM, most likely from mpirun because another rank of the job "
                                "failed (see its message or mpirun's report)\n",
                                world_rank);
  if (notice_length >= static_cast<int>(sizeof notice)) notice_length = static_cast<int>(sizeof notice) - 1;
  struct sigaction action {};
  action.sa_handler = on_sigterm;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace twinsim::exec
