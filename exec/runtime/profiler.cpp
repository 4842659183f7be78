#include "exec/runtime/profiler.hpp"
#include "io/whole_file.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace twinsim::exec {

namespace {

double micros(Profiler::Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

nlohmann::json events_json(const std::vector<ProfileEvent>& events) {
  nlohmann::json out = nlohmann::json::array();
  for (const ProfileEvent& e : events) out.push_back({e.name, e.start_us, e.duration_us});
  return out;
}

void write_json(const nlohmann::json& j, const std::string& path) {
  io::write_file_whole(path, j.dump() + "\n");
}

std::vector<ProfileEvent> events_from_json(const nlohmann::json& j) {
  std::vector<ProfileEvent> out;
  out.reserve(j.size());
  for (const auto& e : j) out.push_back({e[0].get<std::string>(), e[1].get<double>(), e[2].get<double>()});
  return out;
}

}  // namespace

Profiler::Profiler(int rank, bool enabled) : rank_(rank), enabled_(enabled), origin_(Clock::now()) {}

void Profiler::align_origin(Communicator& comm) {
  comm.barrier();
  origin_ = Clock::now();
}

void Profiler::record(std::string_view name, Clock::time_point start, Clock::time_point end) {
  if (!enabled_) return;
  const double duration_us = micros(end - start);
  events_.push_back({std::string(name), micros(start - origin_), duration_us});
  auto it = totals_.find(name);
  if (it == totals_.end()) it = totals_.emplace(std::string(name), OpTotal{}).first;
  it->second.total_s += duration_us * 1e-6;
  it->second.count += 1;
}

void Profiler::begin(std::string_view name) {
  if (!enabled_) return;
  open_.emplace_back(std::string(name), Clock::now());
}

void Profiler::end(std::string_view name) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (open_.empty() || open_.back().first != name)
    throw std::logic_error("Profiler::end(\"" + std::string(name) + "\"): innermost open op is " +
                           (open_.empty() ? std::string("none") : "\"" + open_.back().first + "\""));
  record(name, open_.back().second, now);
  open_.pop_back();
}

void Profiler::clear() {
  events_.clear();
  totals_.clear();
  open_.clear();
}

nlohmann::json Profiler::summary_json() const {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, t] : totals_)
    ops[name] = {{"count", t.count}, {"total_s", t.total_s}, {"mean_s", t.total_s / static_cast<double>(t.count)}};
  return {{"rank", rank_}, {"ops", ops}};
}

nlohmann::json chrome_trace(const std::vector<std::vector<ProfileEvent>>& events_per_rank) {
  // Trace Event Format (Google, "Trace Event Format" doc): complete events "ph":"X",
  // timestamps and durations in microseconds; one thread track per rank.
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t r = 0; r < events_per_rank.size(); ++r) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    for (const ProfileEvent& e : events_per_rank[r])
      events.push_back({{"name", e.name}, {"ph", "X"}, {"pid", 0}, {"tid", r},
                        {"ts", e.start_us}, {"dur", e.duration_us}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

nlohmann::json Profiler::gather_chrome_trace(Communicator& comm) const {
  const std::vector<std::string> all = comm.gather_bytes(events_json(events_).dump(), 0);
  if (comm.rank() != 0) return nullptr;
  std::vector<std::vector<ProfileEvent>> per_rank;
  for (const std::string& s : all) per_rank.push_back(events_from_json(nlohmann::json::parse(s)));
  return chrome_trace(per_rank);
}

nlohmann::json Profiler::gather_summary(Communicator& comm) const {
  const std::vector<std::string> all = comm.gather_bytes(summary_json().dump(), 0);
  if (comm.rank() != 0) return nullptr;
  nlohmann::json ranks = nlohmann::json::array();
  for (const std::string& s : all) ranks.push_back(nlohmann::json::parse(s));

  // per op: the mean and the max over the ranks that ran it of each rank's total
  struct Acc {
    std::int64_t count = 0;
    double sum_s = 0;
    double max_s = 0;
    int ranks = 0;
  };
  std::map<std::string, Acc> acc;
  for (const auto& r : ranks)
    for (const auto& [name, op] : r["ops"].items()) {
      Acc& a = acc[name];
      const double total = op["total_s"].get<double>();
      a.count += op["count"].get<std::int64_t>();
      a.sum_s += total;
      a.max_s = std::max(a.max_s, total);
      a.ranks += 1;
    }
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, a] : acc)
    ops[name] = {{"count", a.count}, {"ranks", a.ranks}, {"mean_total_s", a.sum_s / a.ranks},
                 {"max_total_s", a.max_s}};
  return {{"ranks", ranks}, {"ops", ops}};
}

void Profiler::write_chrome_trace(Communicator& comm, const std::string& path) const {
  const nlohmann::json trace = gather_chrome_trace(comm);
  if (comm.rank() == 0) write_json(trace, path);
}

void Profiler::write_summary(Communicator& comm, const std::string& path) const {
  const nlohmann::json summary = gather_summary(comm);
  if (comm.rank() == 0) write_json(summary, path);
}

ProfileScope::ProfileScope(Profiler& profiler, std::string name)
    : profiler_(profiler), name_(std::move(name)), start_(Profiler::Clock::now()) {}

ProfileScope::~ProfileScope() { profiler_.record(name_, start_, Profiler::Clock::now()); }

}  // namespace twinsim::exec
