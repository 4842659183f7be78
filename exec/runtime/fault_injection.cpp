#include "exec/runtime/fault_injection.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "exec/runtime/checkpoint.hpp"

namespace twinsim::exec {

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  std::size_t used = 0;
  const int x = std::stoi(v, &used);
  if (used != std::string(v).size()) throw std::invalid_argument(std::string(name) + "=" + v + " is not an integer");
  return x;
}

[[noreturn]] void die(int world_rank, const std::string& what) {
  // one write of the whole line, so mpirun cannot interleave other output into it
  const std::string line =
      "rank " + std::to_string(world_rank) + ": injected fault: " + what + ", killing this rank (SIGKILL)\n";
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size())).flush();
  std::raise(SIGKILL);
  std::abort();  // not reached
}

}  // namespace

FaultPlan fault_plan_from_environment() {
  FaultPlan p;
  p.rank = env_int("TWINSIM_FAULT_RANK", -1);
  p.step = env_int("TWINSIM_FAULT_STEP", 0);
  if (const char* k = std::getenv("TWINSIM_FAULT_KIND"); k && *k) p.kind = k;
  if (p.kind != "raise" && p.kind != "kill" && p.kind != "stop" && p.kind != "checkpoint")
    throw std::invalid_argument("TWINSIM_FAULT_KIND=" + p.kind + ": must be raise, kill, stop or checkpoint");
  return p;
}

void inject_step_fault(const FaultPlan& plan, int world_rank, int step) {
  if (!plan.active_on(world_rank) || step != plan.step) return;
  if (plan.kind == "raise")
    throw std::runtime_error("injected fault at step " + std::to_string(step) + " (TWINSIM_FAULT_KIND=raise)");
  if (plan.kind == "kill") die(world_rank, "step " + std::to_string(step));
  if (plan.kind == "stop") {
    const std::string line = "rank " + std::to_string(world_rank) + ": injected fault: step " + std::to_string(step) +
                             ", stopping this rank (SIGSTOP)\n";
    std::cerr.write(line.data(), static_cast<std::streamsize>(line.size())).flush();
    std::raise(SIGSTOP);  // stays stopped until mpirun ends the job (SIGCONT, then SIGTERM)
  }
}

void arm_checkpoint_fault(const FaultPlan& plan, int world_rank, std::function<int()> steps_done) {
  if (!plan.active_on(world_rank) || plan.kind != "checkpoint") return;
  set_checkpoint_write_hook([plan, world_rank, steps_done](const std::string& tmp, const std::string&) {
    if (steps_done() == plan.step + 1) die(world_rank, "while writing checkpoint " + tmp + " (before its rename)");
  });
}

}  // namespace twinsim::exec
