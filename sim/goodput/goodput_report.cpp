#include "sim/goodput/goodput_report.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace twinsim {

nlohmann::json to_json(const TimeToTrain& t, std::int64_t steps) {
  nlohmann::json j{{"steps", steps}, {"finishes", t.finishes}, {"failure_free_days", t.productive_s / 86400.0}};
  if (!t.finishes) return j;
  j["days"] = t.wall_s / 86400.0;
  j["interruptions"] = t.interruptions;
  j["planned_interruptions"] = t.planned_interruptions;
  j["gpu_hours"] = t.gpu_hours;
  j["failure_gpu_hours"] = t.failure_gpu_hours;
  if (t.cost > 0) j["cost"] = t.cost, j["failure_cost"] = t.failure_cost;
  return j;
}

nlohmann::json to_json(const GoodputReport& g) {
  const GoodputPrediction& p = g.prediction;
  const CheckpointCost& c = g.checkpoint;
  nlohmann::json j{
      {"failure_rates", g.rates},
      {"gpus", g.gpus},
      {"nodes", g.nodes},
      {"interruptions_per_day", g.interruptions_per_day},
      {"planned_interruptions_per_day", g.planned_per_day},
      {"mtbf_hours", p.mtbf_s / 3600.0},
      {"checkpoint",
       {{"bytes", c.bytes},
        {"shard_bytes", c.shard_bytes},
        {"async", g.inputs.async_checkpoint},
        {"blocking_s", c.blocking_s},
        {"write_s", c.write_s},
        {"read_s", c.read_s},
        {"storage_write_GBps", g.storage_write_Bps / 1e9},
        {"storage_read_GBps", g.storage_read_Bps / 1e9}}},
      {"interval", {{"minutes", p.interval_s / 60.0}, {"steps", p.interval_steps}, {"optimal", p.interval_optimal}}},
      {"lost_work_per_failure_s", p.lost_work_s},
      {"recovery_per_interruption_s", p.recovery_s},
      {"ettr", p.ettr},
      {"shares",
       {{"training", p.ettr},
        {"checkpoint", p.checkpoint_share},
        {"lost_work", p.lost_work_share},
        {"recovery", p.recovery_share}}}};
  if (g.time) j["time_to_train"] = to_json(*g.time, g.steps);
  return j;
}

namespace {

std::string text(const char* format, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

void row(std::ostream& out, const std::string& label, const std::string& value) {
  out << "  " << label << std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') << value << "\n";
}

}  // namespace

void print_goodput(std::ostream& out, const nlohmann::json& g) {
  out << "goodput (failure rates " << g["failure_rates"].get<std::string>() << ")\n";
  row(out, "interruptions / day", text("%.2f unexpected (MTBF %.2f h), %.2f planned", g["interruptions_per_day"].get<double>(),
                                        g["mtbf_hours"].get<double>(), g["planned_interruptions_per_day"].get<double>()));
  const nlohmann::json& c = g["checkpoint"];
  row(out, "checkpoint", text("%.3g GB (%.3g MB per GPU), ", c["bytes"].get<double>() / 1e9,
                              c["shard_bytes"].get<double>() / 1e6) +
                             (c["async"].get<bool>() ? "async: " : "sync: ") +
                             text("stall %.3g s, write %.3g s, read %.3g s", c["blocking_s"].get<double>(),
                                  c["write_s"].get<double>(), c["read_s"].get<double>()));
  const nlohmann::json& i = g["interval"];
  row(out, "checkpoint interval", text("%.1f min", i["minutes"].get<double>()) + " (" +
                                      std::to_string(i["steps"].get<std::int64_t>()) + " steps, " +
                                      (i["optimal"].get<bool>() ? "Young/Daly" : "the scenario's") + ")");
  row(out, "per interruption", text("%.1f min lost work, %.1f min to recover", g["lost_work_per_failure_s"].get<double>() / 60,
                                    g["recovery_per_interruption_s"].get<double>() / 60));
  const nlohmann::json& s = g["shares"];
  row(out, "effective training time", text("%.1f%%", 100 * g["ettr"].get<double>()) +
                                          text(" (checkpoints %.2f%%, lost work %.2f%%, recovery %.2f%%)",
                                               100 * s["checkpoint"].get<double>(), 100 * s["lost_work"].get<double>(),
                                               100 * s["recovery"].get<double>()));
  if (!g.contains("time_to_train")) return;
  const nlohmann::json& t = g["time_to_train"];
  if (!t["finishes"].get<bool>()) {
    row(out, "time to train", "never: failures come faster than the run recovers");
    return;
  }
  row(out, "time to train", text("%.1f days (%.1f without failures), %.0f interruptions", t["days"].get<double>(),
                                 t["failure_free_days"].get<double>(), t["interruptions"].get<double>()));
  if (t.contains("cost"))
    row(out, "cost", text("%.4g (failures %.4g)", t["cost"].get<double>(), t["failure_cost"].get<double>()));
}

}  // namespace twinsim
