#pragma once
// How fast this machine runs at the moment, in two figures: one GEMM and one memory-bound
// kernel of the executor, operands out of cache. `calibrate` records them beside its
// points; `validate` measures them again before every case, so that a case's error can be
// read against the machine's speed at the time: a shared VM drifts by ~10% over minutes
// (scenarios/validation/host/README.md), and no model of the kernels can predict that.
#include <optional>

#include <nlohmann/json.hpp>

#include "calibrate/samples.hpp"

namespace twinsim::calibrate {

struct SpeedProbe {
  Stats gemm_s;    // kernels/cpu linear_forward, 256 tokens x 256 inputs x 768 outputs
  Stats memory_s;  // kernels/cpu swiglu_forward over 1 Mi elements (12 MiB a call)
  int busy_processes = 1;  // timed as one of this many processes running the probe
};

// Times the probe in this process while busy_processes - 1 forked ones run it too.
SpeedProbe measure_speed_probe(int busy_processes, int repeats = 5, double min_repeat_s = 0.03);

// A probe's speed relative to an earlier one: > 1 when the machine runs faster now.
struct RelativeSpeed {
  double gemm = 1, memory = 1;
};
RelativeSpeed relative_speed(const SpeedProbe& now, const SpeedProbe& then);

nlohmann::json speed_probe_json(const SpeedProbe& p);
// `j` is speed_probe_json's object; throws nlohmann::json::exception when malformed.
SpeedProbe speed_probe_from(const nlohmann::json& j);
// The probe recorded in a calibration's raw points (NAME.json), if it has one (older
// calibrations do not).
std::optional<SpeedProbe> recorded_speed_probe(const nlohmann::json& points);

}  // namespace twinsim::calibrate
