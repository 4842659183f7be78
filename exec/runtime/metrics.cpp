#include "exec/runtime/metrics.hpp"

#include <algorithm>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

namespace twinsim::exec {

MetricsTracker::MetricsTracker(int rank, std::vector<std::pair<std::string, const Communicator*>> groups)
    : rank_(rank), groups_(std::move(groups)) {
  for (const auto& g : groups_) busy_before_.push_back(g.second->traffic().busy_s);
}

RankMetrics MetricsTracker::after_step(int step, double step_s, double loss, const MemoryStats& memory) {
  RankMetrics m;
  m.rank = rank_;
  m.step = step;
  m.steps_done = ++steps_done_;
  m.step_s = step_s;
  m.loss = loss;
  double in_calls = 0;
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    const Communicator::Traffic& t = groups_[i].second->traffic();
    const double busy = t.busy_s - busy_before_[i];
    busy_before_[i] = t.busy_s;
    in_calls += busy;
    m.groups.push_back({groups_[i].first, t.bytes_sent, t.busy_s, step_s > 0 ? busy / step_s : 0});
  }
  m.compute_utilization = step_s > 0 ? std::clamp(1 - in_calls / step_s, 0.0, 1.0) : 0;
  for (const MemCategory c : kMemCategories) {
    m.memory_bytes.emplace_back(std::string(category_name(c)), memory.current_of(c));
    m.memory_peak_bytes.emplace_back(std::string(category_name(c)), memory.peak_of(c));
  }
  return m;
}

namespace {

// One metric family: its HELP and TYPE lines, then a sample per (labels, value).
void family(std::ostream& out, const std::string& name, const std::string& type, const std::string& help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

std::string labels(int rank, const std::string& key = {}, const std::string& value = {}) {
  std::string l = "{rank=\"" + std::to_string(rank) + "\"";
  if (!key.empty()) l += "," + key + "=\"" + value + "\"";
  return l + "}";
}

}  // namespace

std::string prometheus_text(const RankMetrics& m) {
  std::ostringstream out;
  out << std::setprecision(17);
  const std::string rank = labels(m.rank);
  family(out, "twinsim_steps_total", "counter", "Training steps this rank finished in this run.");
  out << "twinsim_steps_total" << rank << " " << m.steps_done << "\n";
  if (m.step < 0) return out.str();
  family(out, "twinsim_step", "gauge", "The last step finished (from 0).");
  out << "twinsim_step" << rank << " " << m.step << "\n";
  family(out, "twinsim_step_seconds", "gauge", "Wall time of the last step on this rank.");
  out << "twinsim_step_seconds" << rank << " " << m.step_s << "\n";
  family(out, "twinsim_loss", "gauge", "Loss of the last step (mean over the global batch).");
  out << "twinsim_loss" << rank << " " << m.loss << "\n";
  family(out, "twinsim_compute_utilization", "gauge",
         "Share of the last step's wall time outside communicator calls (kernels and host work).");
  out << "twinsim_compute_utilization" << rank << " " << m.compute_utilization << "\n";
  family(out, "twinsim_memory_bytes", "gauge", "Bytes live now, by memory category (tracked allocator).");
  for (const auto& [c, b] : m.memory_bytes) out << "twinsim_memory_bytes" << labels(m.rank, "category", c) << " " << b << "\n";
  family(out, "twinsim_memory_peak_bytes", "gauge", "Peak bytes by memory category since training began.");
  for (const auto& [c, b] : m.memory_peak_bytes)
    out << "twinsim_memory_peak_bytes" << labels(m.rank, "category", c) << " " << b << "\n";
  family(out, "twinsim_bytes_sent_total", "counter",
         "Bytes this rank sent in the group's collectives and transfers (a ring's per-rank bytes).");
  for (const GroupTraffic& g : m.groups)
    out << "twinsim_bytes_sent_total" << labels(m.rank, "group", g.group) << " " << g.bytes_sent << "\n";
  family(out, "twinsim_link_utilization", "gauge", "Share of the last step's wall time inside the group's calls.");
  for (const GroupTraffic& g : m.groups)
    out << "twinsim_link_utilization" << labels(m.rank, "group", g.group) << " " << g.utilization << "\n";
  return out.str();
}

nlohmann::json to_json(const RankMetrics& m) {
  nlohmann::json memory = nlohmann::json::object(), peak = nlohmann::json::object(), groups = nlohmann::json::object();
  for (const auto& [c, b] : m.memory_bytes) memory[c] = b;
  for (const auto& [c, b] : m.memory_peak_bytes) peak[c] = b;
  for (const GroupTraffic& g : m.groups)
    groups[g.group] = {{"bytes_sent", g.bytes_sent}, {"busy_s", g.busy_s}, {"utilization", g.utilization}};
  return {{"rank", m.rank},
          {"step", m.step},
          {"step_s", m.step_s},
          {"loss", m.loss},
          {"compute_utilization", m.compute_utilization},
          {"memory_bytes", memory},
          {"memory_peak_bytes", peak},
          {"groups", groups}};
}

void MetricsBoard::publish(const RankMetrics& m) {
  std::string text = prometheus_text(m);
  const std::lock_guard<std::mutex> lock(mutex_);
  text_ = std::move(text);
}

std::string MetricsBoard::text() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return text_;
}

}  // namespace twinsim::exec
