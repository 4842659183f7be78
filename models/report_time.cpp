#include "models/report_time.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "models/report_fields.hpp"

namespace twinsim {

namespace {

using nlohmann::json;

constexpr NumberField<TimeBreakdown> kBreakdownFields[] = {
    {"compute_s", &TimeBreakdown::compute_s},
    {"recompute_s", &TimeBreakdown::recompute_s},
    {"tp_comm_s", &TimeBreakdown::tp_comm_s},
    {"cp_comm_s", &TimeBreakdown::cp_comm_s},
    {"ep_comm_s", &TimeBreakdown::ep_comm_s},
    {"optimizer_s", &TimeBreakdown::optimizer_s},
    {"dp_comm_exposed_s", &TimeBreakdown::dp_comm_exposed_s},
    {"offload_exposed_s", &TimeBreakdown::offload_exposed_s},
    {"pp_bubble_s", &TimeBreakdown::pp_bubble_s},
};

template <class T>
std::optional<T> optional_at(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return std::nullopt;
  if (!j[key].is_number()) throw std::invalid_argument(where + "." + key + " is not a number");
  return j[key].get<T>();
}

}  // namespace

json to_json(const TimeBreakdown& b) {
  json j;
  write_numbers<TimeBreakdown>(j, b, kBreakdownFields);
  return j;
}

TimeBreakdown read_time_breakdown(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + " is missing or not an object");
  TimeBreakdown b;
  for (const NumberField<TimeBreakdown>& f : kBreakdownFields)
    if (const auto v = optional_at<double>(j, f.key, where)) b.*f.member = *v;
  return b;
}

void write_time_section(json& j, const TimeSection& t) {
  if (j.is_null()) j = json::object();
  j["step_s"] = t.step_s;
  if (t.breakdown) j["breakdown"] = to_json(*t.breakdown);
  if (t.reported_stage) j["reported_stage"] = *t.reported_stage;
  if (t.simulated_gpus) j["simulated_gpus"] = *t.simulated_gpus;
  if (t.gemm_clock) j["gemm_clock"] = *t.gemm_clock;
  if (t.breakdown) j["extrapolated_ops"] = t.extrapolated_ops;  // the predicted side's, empty or not
  if (t.warmup_steps) {  // the measured side's
    j["steps_s"] = t.steps_s;
    j["warmup_steps"] = *t.warmup_steps;
  }
}

TimeSection read_time_section(const json& time, const std::string& side) {
  const std::string where = side + " report: time";
  if (!time.is_object()) throw std::invalid_argument(where + " is missing");
  TimeSection t;
  const auto step = optional_at<double>(time, "step_s", where);
  if (!step) throw std::invalid_argument(where + ".step_s is missing or not a number");
  t.step_s = *step;
  if (time.contains("breakdown")) t.breakdown = read_time_breakdown(time["breakdown"], where + ".breakdown");
  t.reported_stage = optional_at<int>(time, "reported_stage", where);
  t.simulated_gpus = optional_at<int>(time, "simulated_gpus", where);
  t.gemm_clock = optional_at<double>(time, "gemm_clock", where);
  if (time.contains("extrapolated_ops")) t.extrapolated_ops = time["extrapolated_ops"].get<std::vector<std::string>>();
  if (time.contains("steps_s")) t.steps_s = time["steps_s"].get<std::vector<double>>();
  t.warmup_steps = optional_at<int>(time, "warmup_steps", where);
  return t;
}

}  // namespace twinsim
