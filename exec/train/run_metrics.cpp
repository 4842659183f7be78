#include "exec/train/run_metrics.hpp"

#include <nlohmann/json.hpp>

#include "io/whole_file.hpp"

namespace twinsim::exec {

RunMetrics::RunMetrics(const MetricsOptions& o, ProcessGroups& g, std::ostream& notes) {
  if (o.port == 0) return;
  const int rank = g.world_rank();
  tracker_.emplace(rank, std::vector<std::pair<std::string, const Communicator*>>{
                             {"tp", &g.tp()}, {"cp", &g.cp()}, {"dp", &g.dp()}, {"dp_cp", &g.dp_cp()},
                             {"ep", &g.ep()}, {"expert_dp", &g.expert_dp()}, {"pp", &g.pp()}, {"world", &g.world()}});
  RankMetrics first;
  first.rank = rank;
  board_.publish(first);
  if (!o.dir.empty()) {
    const std::filesystem::path dir = std::filesystem::path(o.dir) / "metrics";
    std::filesystem::create_directories(dir);
    jsonl_ = dir / ("rank-" + std::to_string(rank) + ".jsonl");
    prom_ = dir / ("rank-" + std::to_string(rank) + ".prom");
  }
  server_ = std::make_unique<MetricsServer>(o.address, o.port + rank, [this] { return board_.text(); });
  notes << "rank " + std::to_string(rank) + ": metrics on http://" + o.address + ":" + std::to_string(server_->port()) +
               "/metrics\n"
        << std::flush;
}

void RunMetrics::after_step(int step, double step_s, double loss, const MemoryStats& memory) {
  if (!tracker_) return;
  const RankMetrics m = tracker_->after_step(step, step_s, loss, memory);
  board_.publish(m);
  if (jsonl_.empty()) return;
  series_ += to_json(m).dump() + "\n";
  io::write_file_whole(jsonl_.string(), series_);
  io::write_file_whole(prom_.string(), prometheus_text(m));
}

}  // namespace twinsim::exec
