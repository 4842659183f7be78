#include "calibrate/machine.hpp"

#include <algorithm>
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

std::string machine_line() {
  std::string model = "unknown CPU";
  std::istringstream cpu(read_text("/proc/cpuinfo"));
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, load average " + load_average();
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
