#pragma once
// What a calibration records about the machine it ran on, read from /proc and sysfs: a
// calibration taken on a busy or different machine says so in its file's header.
#include <string>

namespace twinsim::calibrate {

// The CPU model /proc/cpuinfo names ("unknown CPU" when it names none).
std::string cpu_model();
// The cores as the guest sees them: "2 CPUs, 1 thread per core, L3 32 MiB" (sysfs). Two
// machines with the same model name can differ in it, and the calibration's figures with it.
std::string cpu_layout();
// The `# cpu_layout: ` line of a calibrated file's header comment; "" when it has none.
std::string recorded_cpu_layout(const std::string& header);
// CPU model, cores and the load average.
std::string machine_line();
// The CPU model a calibrated hardware file's header comment records: its `# cpu_model: `
// line, else (files written before that line existed) the start of its machine line,
// "# MODEL, N cores, load average ..."; "" when neither is there.
std::string recorded_cpu_model(const std::string& header);
// The load average part of machine_line() alone ("0.52 0.40 0.31").
std::string load_average();
// The last-level cache (L3) the cores share, MiB (0: not found).
double last_level_cache_MiB();
// The machine's RAM, GiB.
double ram_GiB();

}  // namespace twinsim::calibrate
