#pragma once
// How much of the machine other work took while a timing case ran (issue 61). A case's ranks
// own the cores (one each), so CPU time used meanwhile by anything else -- another process,
// or the hypervisor running another guest on our vCPUs ("steal") -- slowed the case by a
// share no model prices: a run measured under it is the machine's state, not the plan's
// cost. Read from /proc/stat (the whole machine) and getrusage(RUSAGE_CHILDREN) (the
// children this process has waited for: a case's mpirun and, through it, its ranks).
#include <chrono>
#include <string>

namespace twinsim::calibrate {

// The machine's CPU time since boot, all CPUs together, in seconds.
struct CpuSeconds {
  double busy = 0;   // user + nice + system + irq + softirq (guest time is inside user)
  double steal = 0;  // a vCPU wanted to run and the hypervisor ran something else
};

// /proc/stat's first line, "cpu  user nice system idle iowait irq softirq steal ...", in
// clock ticks (`ticks_per_s`, sysconf(_SC_CLK_TCK)); throws std::runtime_error without it.
CpuSeconds parse_proc_stat(const std::string& text, double ticks_per_s);

// Cores' worth of CPU that others used on average over an interval.
struct OtherCpuUse {
  double other_cores = 0;  // other processes: the machine's busy time less our own children's
  double steal_cores = 0;  // other guests (the hypervisor's steal)
  double total() const { return other_cores + steal_cores; }
};

// Between two readings of the machine, `own_cpu_s` of them ours, over `wall_s` seconds
// (negative differences, from rounding to ticks, count as none).
OtherCpuUse other_cpu_use(const CpuSeconds& before, const CpuSeconds& after, double own_cpu_s, double wall_s);

// Measures an interval from its construction: finish() gives the others' use up to then.
// Only the children waited for in between count as ours (run them to completion inside).
class OtherCpuMeter {
 public:
  OtherCpuMeter();
  OtherCpuUse finish() const;

 private:
  CpuSeconds machine_;
  double children_cpu_s_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace twinsim::calibrate
