#include "app/host_calibration.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "app/source_tree.hpp"
#include "calibrate/machine.hpp"
#include "scenario/hardware_file.hpp"

namespace twinsim {

std::filesystem::path host_calibration_file() {
  if (const char* file = std::getenv("TWINSIM_HOST_FILE")) return file;
  return find_in_source_tree("hardware/calibrated/host.yaml");
}

void use_host_calibration() {
  const std::filesystem::path file = host_calibration_file();
  if (!file.empty() && std::filesystem::is_regular_file(file)) set_host_cluster_file(file.string());
}

std::string other_cpu_warning(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string header, line;
  // the CPU model is in the header comment, which ends at the first key
  while (std::getline(in, line) && line.rfind('#', 0) == 0) header += line + "\n";
  const std::string recorded = calibrate::recorded_cpu_model(header);
  const std::string here = calibrate::cpu_model();
  if (!recorded.empty() && recorded != here)
    return "warning: " + file.string() + " was calibrated on '" + recorded + "', this machine is '" + here +
           "': its figures may be far off here; run `twinsim calibrate` on this machine";
  // the same model name on another core count or cache (VM sizes of one CPU family)
  const std::string layout = calibrate::recorded_cpu_layout(header), layout_here = calibrate::cpu_layout();
  if (!layout.empty() && layout != layout_here)
    return "warning: " + file.string() + " was calibrated on " + layout + ", this machine has " + layout_here +
           ": its figures may be far off here; run `twinsim calibrate` on this machine";
  return "";
}

void warn_if_host_calibrated_elsewhere(const std::string& cluster_name) {
  if (cluster_name != "host") return;
  const std::filesystem::path file = host_calibration_file();
  if (file.empty() || !std::filesystem::is_regular_file(file)) return;
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");  // one warning per run, not per rank
  if (rank && std::string(rank) != "0") return;
  if (const std::string warning = other_cpu_warning(file); !warning.empty()) std::cerr << "twinsim: " << warning << "\n";
}

}  // namespace twinsim
