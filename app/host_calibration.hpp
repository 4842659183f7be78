#pragma once
// The calibrated host file (`twinsim calibrate`'s output) that `cluster: host` stands for,
// and the warning when it was measured on another CPU model than this machine's.
#include <filesystem>
#include <string>

namespace twinsim {

// $TWINSIM_HOST_FILE when set (empty: none), else hardware/calibrated/host.yaml from the
// working directory or the source tree (app/source_tree.hpp). `calibrate` writes it,
// `validate` reads it, and `cluster: host` in any scenario stands for it when it exists.
std::filesystem::path host_calibration_file();

// Tells the scenario loader that `cluster: host` means host_calibration_file() when it
// exists (else the catalog's placeholder entry).
void use_host_calibration();

// A warning (one line) when `file` records a CPU model or a core layout (`# cpu_layout:`)
// other than this machine's, else "".
std::string other_cpu_warning(const std::filesystem::path& file);

// Prints other_cpu_warning on stderr (rank 0 alone under mpirun) when a scenario's cluster
// is `host` and that name stands for a calibrated host file.
void warn_if_host_calibrated_elsewhere(const std::string& cluster_name);

}  // namespace twinsim
