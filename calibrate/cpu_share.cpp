#include "calibrate/cpu_share.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace twinsim::calibrate {

namespace {

CpuSeconds machine_cpu_seconds() {
  std::ifstream f("/proc/stat");
  std::stringstream text;
  text << f.rdbuf();
  return parse_proc_stat(text.str(), static_cast<double>(sysconf(_SC_CLK_TCK)));
}

double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

}  // namespace

CpuSeconds parse_proc_stat(const std::string& text, double ticks_per_s) {
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  std::istringstream fields(line);
  std::string label;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  fields >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  if (label != "cpu" || !fields || ticks_per_s <= 0)
    throw std::runtime_error("/proc/stat: no 'cpu' line of times (read: '" + line + "')");
  fields >> steal;  // Linux 2.6.11 on; older kernels have none
  return {(user + nice + system + irq + softirq) / ticks_per_s, (fields ? steal : 0.0) / ticks_per_s};
}

OtherCpuUse other_cpu_use(const CpuSeconds& before, const CpuSeconds& after, double own_cpu_s, double wall_s) {
  if (wall_s <= 0) return {};
  const double others = std::max(0.0, after.busy - before.busy - own_cpu_s);
  const double steal = std::max(0.0, after.steal - before.steal);
  return {others / wall_s, steal / wall_s};
}

OtherCpuMeter::OtherCpuMeter()
    : machine_(machine_cpu_seconds()),
      children_cpu_s_(children_cpu_seconds()),
      start_(std::chrono::steady_clock::now()) {}

OtherCpuUse OtherCpuMeter::finish() const {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return other_cpu_use(machine_, machine_cpu_seconds(), children_cpu_seconds() - children_cpu_s_, wall);
}

}  // namespace twinsim::calibrate
