#pragma once
// The reports' op tables (docs/SCENARIO.md): the simulator's lists (time.ops of a training
// step, inference.prefill.ops and inference.decode.ops of a serving pass) and the executor's
// maps (measured.json's ops per step, its inference passes' ops per pass) are written
// through these, and the comparison (compare/op_times) reads them back through them, so
// their keys live in this file only. Op names: models/op_names.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace twinsim {

// One predicted op: one call's time and the calls per step (or per pass), on one GPU; a
// training step's rows also say whether a curve was extrapolated and what the op moves.
struct PredictedOp {
  std::string name;
  double time_s = 0;
  double count = 0;
  std::optional<bool> extrapolated;
  std::optional<double> hbm_bytes;
  std::optional<std::int64_t> launches;
};

nlohmann::json to_json(const std::vector<PredictedOp>& ops);
// Reads a list of {name, time_s, count, ...}; `where` names it in errors (std::invalid_argument).
std::vector<PredictedOp> read_predicted_ops(const nlohmann::json& list, const std::string& where);

// One measured op, averaged over the ranks that ran it: calls and seconds per step (a
// training run) or per pass (an inference run), and the slowest rank's seconds.
struct MeasuredOp {
  double count = 0, mean_s = 0, max_s = 0;
};
using MeasuredOps = std::map<std::string, MeasuredOp>;
enum class OpUnit { step, pass };  // the keys' suffix: count_per_step, mean_s_per_pass, ...

nlohmann::json to_json(const MeasuredOps& ops, OpUnit unit);
MeasuredOps read_measured_ops(const nlohmann::json& map, OpUnit unit, const std::string& where);

}  // namespace twinsim
