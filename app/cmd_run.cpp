// `mpirun -np N twinsim run SCENARIO --steps K --out DIR [--set K=V]...`: runs the
// scenario's training plan for real, one MPI rank per GPU of the plan, and writes
// DIR/measured.json (SCENARIO.md's report with measured values, plus "ops" and
// "losses") and DIR/trace.json (Chrome trace, one track per rank).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/commands.hpp"
#include "exec/model/tensor.hpp"
#include "exec/runtime/data.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "exec/train/run_report.hpp"
#include "scenario/load.hpp"

namespace twinsim {

namespace {

struct RunArgs {
  std::string path;
  std::vector<std::string> overrides;
  int steps = 3;
  std::string out = "run-out";
  std::uint64_t seed = 1234;
  float lr = 1e-3f;
};

// Written beside and renamed over, so a reader never sees half a file.
void write_atomically(const std::filesystem::path& path, const nlohmann::json& j) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
    f << j.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path);
}

exec::TrainConfig train_config(const Scenario& s, const RunArgs& a) {
  if (!s.is_training())
    throw ScenarioError("inference", "", "is not run by the executor yet; `twinsim run` executes training scenarios");
  exec::TrainConfig c;
  c.model = s.model;
  c.plan = s.plan;
  c.training = *s.training;
  c.seed = a.seed;
  c.lr = a.lr;
  return c;
}

void run(const RunArgs& a) {
  exec::MpiSession session;
  auto world = exec::MpiCommunicator::world();
  const Scenario s = load_scenario_file(a.path, a.overrides);
  const exec::TrainConfig config = train_config(s, a);
  if (world->size() != s.plan.world_size())
    throw ScenarioError("plan", "tp*pp*cp*dp=" + std::to_string(s.plan.world_size()),
                        "needs that many MPI ranks (mpirun -np " + std::to_string(s.plan.world_size()) +
                            "); this job has " + std::to_string(world->size()));
  exec::TrackedAllocator allocator;
  exec::set_model_allocator(&allocator);
  exec::Profiler profiler(world->rank());
  exec::ProcessGroups groups(*world, config.plan);
  exec::SyntheticTokens data(config.seed, static_cast<int>(config.model.vocab));
  exec::Trainer trainer(config, groups, data, &profiler);
  // the full model exists on every rank while it is initialised and sharded (ZeRO);
  // the report's peaks are those of training
  allocator.reset_peaks();
  profiler.align_origin(*world);
  exec::RunRecord record;
  for (int k = 0; k < a.steps; ++k) {
    record.steps.push_back(trainer.step());
    if (world->rank() == 0)
      std::cout << "step " << k << ": loss " << record.steps.back().loss << ", " << record.steps.back().seconds
                << " s" << (record.steps.back().skipped ? " (skipped: fp16 overflow)" : "") << std::endl;
    if (k == 0 && a.steps > 1) profiler.clear();  // op times leave out the warm-up step
  }
  const nlohmann::json report =
      exec::measured_report(config, s.cluster.gpu, groups, trainer, allocator, profiler, record);
  const nlohmann::json trace = profiler.gather_chrome_trace(*world);
  if (world->rank() == 0) {
    std::filesystem::create_directories(a.out);
    write_atomically(std::filesystem::path(a.out) / "measured.json", report);
    write_atomically(std::filesystem::path(a.out) / "trace.json", trace);
    std::cout << "wrote " << a.out << "/measured.json and trace.json: step " << report["time"]["step_s"]
              << " s, " << report["throughput"]["tokens_per_s"] << " tokens/s, peak "
              << report["memory"]["peak_bytes"] << " bytes per rank" << std::endl;
  }
  exec::set_model_allocator(nullptr);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "run a training scenario for real over MPI ranks and measure it");
  cmd->add_option("scenario", a->path, "scenario file (YAML or JSON)")->required();
  cmd->add_option("--set", a->overrides, "override a key, e.g. --set plan.tp=2 (repeatable)");
  cmd->add_option("--steps", a->steps, "training steps (the first is a warm-up left out of the step time)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", a->out, "output folder for measured.json and trace.json");
  cmd->add_option("--seed", a->seed, "seed of the weights and the synthetic data");
  cmd->add_option("--lr", a->lr, "learning rate");
  cmd->callback([a] { run(*a); });
}

}  // namespace twinsim
