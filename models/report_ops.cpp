#include "models/report_ops.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace twinsim {

namespace {

using nlohmann::json;

// A count written as the integer it is when whole (a training step's calls always are),
// as the report always wrote them.
json count_json(double v) {
  return v == static_cast<double>(static_cast<std::int64_t>(v)) ? json(static_cast<std::int64_t>(v)) : json(v);
}

double number_at(const json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number())
    throw std::invalid_argument(where + "." + key + " is missing or not a number");
  return j[key].get<double>();
}

struct MeasuredKeys {
  std::string count, mean, max;
};

MeasuredKeys keys(OpUnit unit) {
  const std::string per = unit == OpUnit::step ? "_per_step" : "_per_pass";
  return {"count" + per, "mean_s" + per, "max_s" + per};
}

}  // namespace

json to_json(const std::vector<PredictedOp>& ops) {
  json list = json::array();
  for (const PredictedOp& op : ops) {
    json j = {{"name", op.name}, {"time_s", op.time_s}, {"count", count_json(op.count)}};
    if (op.extrapolated) j["extrapolated"] = *op.extrapolated;
    if (op.hbm_bytes) j["hbm_bytes"] = *op.hbm_bytes;
    if (op.launches) j["launches"] = *op.launches;
    list.push_back(std::move(j));
  }
  return list;
}

std::vector<PredictedOp> read_predicted_ops(const json& list, const std::string& where) {
  if (!list.is_array()) throw std::invalid_argument(where + " is missing or not a list");
  std::vector<PredictedOp> ops;
  for (const json& j : list) {
    const std::string at = where + "[]";
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
      throw std::invalid_argument(at + ".name is missing or not a string");
    PredictedOp op;
    op.name = j["name"].get<std::string>();
    op.time_s = number_at(j, "time_s", at);
    op.count = number_at(j, "count", at);
    if (j.contains("extrapolated") && j["extrapolated"].is_boolean()) op.extrapolated = j["extrapolated"].get<bool>();
    if (j.contains("hbm_bytes")) op.hbm_bytes = number_at(j, "hbm_bytes", at);
    if (j.contains("launches")) op.launches = static_cast<std::int64_t>(number_at(j, "launches", at));
    ops.push_back(std::move(op));
  }
  return ops;
}

json to_json(const MeasuredOps& ops, OpUnit unit) {
  const MeasuredKeys k = keys(unit);
  json map = json::object();
  for (const auto& [name, op] : ops) map[name] = {{k.count, op.count}, {k.mean, op.mean_s}, {k.max, op.max_s}};
  return map;
}

MeasuredOps read_measured_ops(const json& map, OpUnit unit, const std::string& where) {
  if (!map.is_object()) throw std::invalid_argument(where + " is missing or not a mapping");
  const MeasuredKeys k = keys(unit);
  MeasuredOps ops;
  for (const auto& [name, j] : map.items()) {
    const std::string at = where + "." + name;
    MeasuredOp& op = ops[name];
    op.count = number_at(j, k.count, at);
    op.mean_s = number_at(j, k.mean, at);
    if (j.contains(k.max)) op.max_s = number_at(j, k.max, at);  // older reports carry no max
  }
  return ops;
}

}  // namespace twinsim
