#include "calibrate/machine.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace twinsim::calibrate {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string load_average() {
  const std::string load = read_text("/proc/loadavg");
  return load.substr(0, load.find(' ', load.find(' ', load.find(' ') + 1) + 1));
}

std::string cpu_model() {
  std::istringstream cpu(read_text("/proc/cpuinfo"));
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      const std::size_t start = line.find_first_not_of(" \t", line.find(':') + 1);
      return start == std::string::npos ? "unknown CPU" : line.substr(start);
    }
  return "unknown CPU";
}

std::string machine_line() {
  return cpu_model() + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, load average " + load_average();
}

std::string cpu_layout() {
  // thread_siblings_list: "0" alone, "0-1" or "0,2" with a sibling
  const std::string siblings = read_text("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list");
  int threads = 1;
  for (char ch : siblings) threads += ch == ',' || ch == '-';
  char l3[32];
  std::snprintf(l3, sizeof l3, "%.0f", last_level_cache_MiB());
  return std::to_string(std::thread::hardware_concurrency()) + " CPUs, " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads") + " per core, L3 " + l3 + " MiB";
}

std::string recorded_cpu_layout(const std::string& header) {
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("# cpu_layout: ", 0) == 0) return line.substr(14);
  return "";
}

std::string recorded_cpu_model(const std::string& header) {
  std::istringstream lines(header);
  std::string machine;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# cpu_model: ", 0) == 0) return line.substr(13);
    const std::size_t cores = line.find(" cores, load average");
    if (machine.empty() && line.rfind("# ", 0) == 0 && cores != std::string::npos) {
      const std::size_t comma = line.rfind(", ", cores);
      if (comma != std::string::npos && comma > 2) machine = line.substr(2, comma - 2);
    }
  }
  return machine;
}

double last_level_cache_MiB() {
  double best = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string size = read_text("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    if (size.empty()) continue;
    const double value = std::atof(size.c_str());  // "32768K"
    const char unit = size.find('M') != std::string::npos ? 'M' : size.find('K') != std::string::npos ? 'K' : 'B';
    best = std::max(best, unit == 'M' ? value : unit == 'K' ? value / 1024 : value / 1048576);
  }
  return best;
}

double ram_GiB() {
  std::istringstream mem(read_text("/proc/meminfo"));
  std::string key;
  double kib = 0;
  mem >> key >> kib;  // MemTotal: N kB
  return kib / 1048576.0;
}

}  // namespace twinsim::calibrate
