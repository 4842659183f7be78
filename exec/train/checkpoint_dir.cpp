#include "exec/train/checkpoint_dir.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "exec/runtime/checkpoint.hpp"

namespace twinsim::exec {

namespace fs = std::filesystem;

namespace {

const char* kLatest = "latest";

void write_latest(const fs::path& dir, int step) {
  const fs::path tmp = dir / (std::string(kLatest) + ".tmp");
  {
    std::ofstream f(tmp);
    f << step << "\n";
    f.flush();
    if (!f) throw CheckpointError("checkpoint folder '" + dir.string() + "': cannot write " + tmp.string());
  }
  fs::rename(tmp, dir / kLatest);  // atomic: readers see the old step or the new one
}

}  // namespace

std::string CheckpointDir::rank_file(int step, int rank) const {
  return (fs::path(dir_) / ("step-" + std::to_string(step)) / ("rank-" + std::to_string(rank) + ".safetensors"))
      .string();
}

void CheckpointDir::save(Trainer& trainer, Communicator& world) const {
  const int step = trainer.steps_done();
  const std::string path = rank_file(step, world.rank());
  fs::create_directories(fs::path(path).parent_path());
  save_safetensors(path, trainer.save_state());
  float done = 1;
  world.all_reduce(&done, 1);  // the barrier: every rank's file is in place
  if (world.rank() != 0) return;
  write_latest(dir_, step);
  // the newest `keep_` steps stay (this one included); older ones are no longer needed
  std::vector<std::pair<int, fs::path>> steps;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    int k = -1;
    const auto [end, error] = std::from_chars(name.data() + std::min<std::size_t>(5, name.size()), name.data() + name.size(), k);
    if (name.rfind("step-", 0) == 0 && error == std::errc() && end == name.data() + name.size() && k <= step)
      steps.emplace_back(k, entry.path());
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = static_cast<std::size_t>(keep_); i < steps.size(); ++i)
    if (steps[i].first != 0) fs::remove_all(steps[i].second);  // step 0 (--save-initial) stays
}

int CheckpointDir::resume(Trainer& trainer, int world_rank) const {
  const int step = latest_step();
  trainer.load_state(load_safetensors(rank_file(step, world_rank)));
  return step;
}

int CheckpointDir::latest_step() const {
  const fs::path latest = fs::path(dir_) / kLatest;
  std::ifstream f(latest);
  if (!f)
    throw CheckpointError("no complete checkpoint in '" + dir_ + "' (" + latest.string() +
                          " is missing or unreadable)");
  // the file holds one step number and its newline, nothing else ("50garbage" is not 50)
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  int step = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), step);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || step < 0)
    throw CheckpointError(latest.string() + " holds '" + text.substr(0, 40) +
                          "', not a step number: the checkpoint folder is damaged");
  return step;
}

}  // namespace twinsim::exec
