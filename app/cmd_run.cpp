// `mpirun -np N twinsim run SCENARIO --steps K --out DIR [--set K=V]...`: runs the
// scenario's training plan (or inference batch: prefill + decode with a KV cache) for
// real, one MPI rank per GPU of the plan (exec/train/run_job.hpp), and writes
// DIR/measured.json (SCENARIO.md's report with measured values, plus "ops" and
// "losses") and DIR/trace.json (Chrome trace, one track per rank).
//
// Faults: any rank's exception is printed as "rank R: <cause>" and aborts the whole job
// (MPI_Abort), so no rank waits forever in a collective; a rank that dies is reported by
// mpirun, which kills the others; a rank that stops is ended by the others' watchdogs.
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "app/cuda_executable.hpp"
#include "app/executor_commands.hpp"
#include "exec/cuda/device_check.hpp"
#ifdef TWINSIM_HAVE_CUDA
#include "exec/cuda/cuda_backend.hpp"
#endif
#include "exec/runtime/backend.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "exec/train/run_job.hpp"
#include "io/whole_file.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"

namespace twinsim {

namespace {

struct RunArgs {
  std::string path;
  std::vector<std::string> overrides;
  std::string out = "run-out";
  std::string device = "cpu";
  exec::JobOptions job;
};

// --device cuda: the CUDA backend on each rank's GPU (exec/cuda/cuda_backend.hpp), current
// for the whole run. Refused only when it cannot run: this build has no CUDA backend, or
// the process sees no GPU (DeviceUnavailableError says which, before MPI starts).
class DeviceScope {
 public:
  DeviceScope(const std::string& device, const exec::MpiCommunicator& world) {
    if (device != "cuda") return;
#ifdef TWINSIM_HAVE_CUDA
    backend_ = exec::make_cuda_backend(world);
    exec::set_current_backend(backend_.get());
#else
    (void)world;
    exec::require_cuda_device();  // throws: this build has no CUDA backend
#endif
  }
  ~DeviceScope() {
    if (backend_) exec::set_current_backend(nullptr);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::unique_ptr<exec::Backend> backend_;
};

// Written beside and renamed over, so a reader never sees half a file.
void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  io::write_file_whole(path.string(), [&](std::ostream& f) { f << j.dump(2) << "\n"; });
}

// --out is a folder (made if missing) where measured.json and trace.json can be written:
// checked before the training, not after every step of it.
void check_out_folder(const std::string& out) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::exists(out, error) && !fs::is_directory(out, error))
    throw std::runtime_error("--out " + out + ": is not a folder (it receives measured.json, trace.json and metrics/)");
  fs::create_directories(out, error);
  if (error) throw std::runtime_error("--out " + out + ": cannot create the folder: " + error.message());
  for (const char* file : {"measured.json", "trace.json"}) io::check_writable((fs::path(out) / file).string());
}

void run_rank(const RunArgs& a, exec::MpiCommunicator& world) {
  const Scenario s = load_scenario_file(a.path, a.overrides);
  if (world.rank() == 0) check_out_folder(a.out);
  const exec::JobOutput out = exec::run_job(s, a.job, world, std::cout, std::cerr);
  if (world.rank() != 0) return;
  std::filesystem::create_directories(a.out);
  write_json(std::filesystem::path(a.out) / "measured.json", out.report);
  write_json(std::filesystem::path(a.out) / "trace.json", out.trace);
  std::cout << "wrote " << a.out << "/measured.json and trace.json: " << out.summary << std::endl;
}

void run(const RunArgs& a) {
#ifndef TWINSIM_HAVE_CUDA
  if (a.device == "cuda") hand_over_to_cuda_executable();  // `twinsim` -> `twinsim-cuda`
#endif
  if (a.device == "cuda") exec::require_cuda_device();
  exec::MpiSession session;
  auto world = exec::MpiCommunicator::world();
  try {
    const DeviceScope device(a.device, *world);
    run_rank(a, *world);
  } catch (const std::exception& e) {
    if (world->size() == 1) throw;  // main prints it and picks the exit status
    // one rank's failure ends the job: the others may be blocked in a collective with it
    // one write of the whole line: cerr is unbuffered, and piece by piece mpirun may forward
    // MPI_Abort's banner between "rank " and the rest (seen once in a CI run)
    const std::string line = "rank " + std::to_string(world->rank()) + ": " + e.what() + "\n";
    std::cerr.write(line.data(), static_cast<std::streamsize>(line.size())).flush();
    MPI_Abort(MPI_COMM_WORLD, dynamic_cast<const ScenarioError*>(&e) ? 2 : 1);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  exec::JobOptions& job = a->job;
  CLI::App* cmd = app.add_subcommand(kRunCommand.name, kRunCommand.summary);
  cmd->add_option("scenario", a->path, "scenario file (YAML or JSON)")->required();
  cmd->add_option("--set", a->overrides, "override a key, e.g. --set plan.tp=2 (repeatable)");
  cmd->add_option("--steps", job.steps, "training steps (the first is a warm-up left out of the step time)")
      ->check(cli::whole(1, 1'000'000));
  cmd->add_option("--decode-rounds", job.decode_rounds,
                  "inference: run the decode this many times from the same prefill; TPOT is the median of every "
                  "pass (default 1)")
      ->check(cli::whole(1, 10'000));
  cmd->add_option("--out", a->out, "output folder for measured.json and trace.json");
  cmd->add_option("--seed", job.seed, "seed of the weights and the synthetic data")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--lr", job.lr, "peak learning rate (default: the scenario's training.optimizer.lr, 1e-3)")
      ->check(cli::number(0, 1e3, true));
  cmd->add_option("--device", a->device, "where the model runs: cpu, or cuda (the CUDA backend on one GPU per rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--memory-limit", job.memory_limit,
                  "bytes per rank (default: the scenario GPU's memory); a plan predicted not to fit is refused")
      ->check(cli::whole(1, std::int64_t{1} << 60));
  cmd->add_flag("--force", job.force, "run a plan even when its training state is predicted not to fit");
  CLI::Option* checkpoint_dir =
      cmd->add_option("--checkpoint-dir", job.checkpoint_dir, "save a checkpoint after every step into this folder");
  // each of these acts on --checkpoint-dir: without it, CLI11 refuses the line (exit 107, "requires")
  cmd->add_flag("--resume", job.resume, "continue from the newest complete checkpoint in --checkpoint-dir")
      ->needs(checkpoint_dir);
  cmd->add_option("--keep", job.keep, "checkpoints kept in --checkpoint-dir: the newest N steps (default 1)")
      ->check(cli::whole(1, 1'000'000))
      ->needs(checkpoint_dir);
  cmd->add_flag("--save-initial", job.save_initial, "also save step 0 (the initial weights) into --checkpoint-dir")
      ->needs(checkpoint_dir);
  cmd->add_option("--watchdog-timeout", job.watchdog_timeout_s,
                  "seconds a rank of a multi-rank job may go without progress (a peer dead or stopped) before "
                  "it ends the job naming itself and its last op (default 60; 0: no watchdog)")
      ->check(cli::number(0, 1e6));
  cmd->add_option("--metrics-port", job.metrics.port,
                  "serve live metrics (Prometheus text format) at http://ADDRESS:P+RANK/metrics while training, "
                  "and keep them in OUT/metrics/")
      ->check(cli::whole(1, 65535));
  cmd->add_option("--metrics-address", job.metrics.address, "address the metrics ports listen on (default 127.0.0.1)");
  cmd->callback([a] {
    a->job.metrics.dir = a->out;
    run(*a);
  });
}

}  // namespace twinsim
