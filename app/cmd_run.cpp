// `mpirun -np N twinsim run SCENARIO --steps K --out DIR [--set K=V]...`: runs the
// scenario's training plan (or inference batch: prefill + decode with a KV cache) for
// real, one MPI rank per GPU of the plan, and writes
// DIR/measured.json (SCENARIO.md's report with measured values, plus "ops" and
// "losses") and DIR/trace.json (Chrome trace, one track per rank).
//
// Faults: any rank's exception is printed as "rank R: <cause>" and aborts the whole job
// (MPI_Abort), so no rank waits forever in a collective; a rank that dies is reported by
// mpirun, which kills the others. A plan whose training state (exec/train/memory_estimate)
// exceeds the capacity (--memory-limit, else the scenario GPU's memory) is refused before
// anything is allocated unless --force; the same capacity bounds the tracked allocator, whose
// failures name the memory category. --checkpoint-dir saves every step (checkpoint_dir.hpp);
// --resume continues from the newest complete checkpoint up to --steps steps in all.
#include <limits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "app/commands.hpp"
#include "app/cli_checks.hpp"
#include "exec/cuda/device_check.hpp"
#include "exec/model/tensor.hpp"
#include "exec/runtime/data.hpp"
#include "exec/runtime/fault_injection.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "exec/runtime/watchdog.hpp"
#include "exec/train/checkpoint_dir.hpp"
#include "exec/train/inference_run.hpp"
#include "exec/train/memory_estimate.hpp"
#include "exec/train/run_report.hpp"
#include "scenario/load.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct RunArgs {
  std::string path;
  std::vector<std::string> overrides;
  int steps = 3;
  std::string out = "run-out";
  std::uint64_t seed = 1234;
  float lr = 0;  // 0: the scenario's training.optimizer.lr (default 1e-3)
  std::string device = "cpu";
  std::int64_t memory_limit = 0;  // 0: the scenario GPU's memory_bytes
  bool force = false;
  std::string checkpoint_dir;
  bool resume = false;
  int keep = 1;               // checkpoints kept: the newest N steps
  bool save_initial = false;  // also save step 0, the initial weights
  double watchdog_timeout_s = 60;  // a rank without progress this long ends the job; 0: off
};

// Written beside and renamed over, so a reader never sees half a file.
void write_atomically(const std::filesystem::path& path, const nlohmann::json& j) {
  io::write_file_whole(path.string(), [&](std::ostream& f) { f << j.dump(2) << "\n"; });
}

exec::TrainConfig train_config(const Scenario& s, const RunArgs& a) {
  exec::TrainConfig c;
  c.model = s.model;
  c.plan = s.plan;
  c.training = *s.training;
  c.seed = a.seed;
  c.lr = a.lr > 0 ? a.lr : static_cast<float>(s.training->optim.lr);
  c.weight_decay = static_cast<float>(s.training->optim.weight_decay);
  return c;
}

// --device cuda: the executor's model runs on the CPU kernels, so it always stops here
// and says why: no GPU visible, or a GPU the CPU executor cannot use yet.
void check_device(const std::string& device) {
  if (device == "cpu") return;
  std::string why;
  if (!exec::cuda_device_available(&why)) throw std::runtime_error("--device cuda: " + why);
  throw std::runtime_error("--device cuda: " + why +
                           "; but the executor's model runs on the CPU kernels only: use --device cpu");
}

// Refuses a plan whose training state does not fit, before the model is allocated.
void check_fits(const exec::TrainConfig& config, std::int64_t capacity, bool force) {
  const exec::StateEstimate e = exec::estimate_training_state(config);
  if (capacity <= 0 || e.total_bytes() <= capacity) return;
  if (force) {
    std::cerr << "warning: --force: " << exec::describe(e, capacity) << std::endl;
    return;
  }
  throw std::runtime_error("plan does not fit: " + exec::describe(e, capacity) +
                           "; refused before allocating (--force runs it anyway)");
}

// The executor reduces every gradient in one call after the backward and gathers ZeRO
// shards right after the optimizer step: it overlaps neither with compute. Said once, so
// a comparison with a simulation of the overlapped plan is not taken at face value.
void note_overlaps_not_run(const Plan& plan, int rank) {
  if (rank != 0 || plan.dp * plan.cp == 1) return;
  if (plan.overlap_grad_reduce || (plan.zero >= 1 && plan.overlap_param_gather))
    std::cerr << std::string("note: the executor does not overlap data-parallel communication with compute; it runs "
                             "this plan as plan.overlap_grad_reduce=false, plan.overlap_param_gather=false (simulate "
                             "it so to compare)\n")
              << std::flush;
}

void write_outputs(const RunArgs& a, const nlohmann::json& report, const nlohmann::json& trace) {
  std::filesystem::create_directories(a.out);
  write_atomically(std::filesystem::path(a.out) / "measured.json", report);
  write_atomically(std::filesystem::path(a.out) / "trace.json", trace);
}

// An inference scenario: one static batch, prefill then greedy decode (inference_run.hpp).
void serve_ranks(const RunArgs& a, const Scenario& s, exec::MpiCommunicator& world) {
  exec::InferenceConfig config{s.model, s.plan, *s.inference, a.seed};
  exec::validate(config);
  exec::TrackedAllocator allocator(a.memory_limit > 0 ? a.memory_limit : s.cluster.gpu.memory_bytes);
  exec::set_model_allocator(&allocator);
  exec::Profiler profiler(world.rank());
  exec::ProcessGroups groups(world, config.plan);
  exec::SyntheticTokens prompts(config.seed, static_cast<int>(config.model.vocab));
  profiler.align_origin(world);
  const exec::InferenceRecord record = exec::run_inference(config, groups, prompts, &profiler, allocator, s.cluster.gpu);
  const nlohmann::json report = exec::measured_inference_report(config, groups, record, profiler);
  const nlohmann::json trace = profiler.gather_chrome_trace(world);
  if (world.rank() == 0) {
    write_outputs(a, report, trace);
    const nlohmann::json& m = report["inference"];
    std::cout << "wrote " << a.out << "/measured.json and trace.json: TTFT " << m["ttft_s"] << " s, TPOT "
              << m["tpot_s"] << " s, " << m["output_tokens_per_s"] << " output tokens/s, KV cache "
              << m["kv_cache_bytes_per_token"] << " bytes per token" << std::endl;
  }
  exec::set_model_allocator(nullptr);
}

void run_ranks(const RunArgs& a, exec::MpiCommunicator& world) {
  const exec::FaultPlan fault = exec::fault_plan_from_environment();
  const Scenario s = load_scenario_file(a.path, a.overrides);
  if (world.size() != s.plan.world_size())
    throw ScenarioError("plan", "tp*pp*cp*dp=" + std::to_string(s.plan.world_size()),
                        "needs that many MPI ranks (mpirun -np " + std::to_string(s.plan.world_size()) +
                            "); this job has " + std::to_string(world.size()));
  const exec::Watchdog watchdog(world.rank(), world.size() > 1 ? a.watchdog_timeout_s : 0);
  if (!s.is_training()) return serve_ranks(a, s, world);
  const exec::TrainConfig config = train_config(s, a);
  if (a.resume && a.checkpoint_dir.empty()) throw std::invalid_argument("--resume needs --checkpoint-dir");
  if ((a.save_initial || a.keep != 1) && a.checkpoint_dir.empty())
    throw std::invalid_argument(std::string(a.save_initial ? "--save-initial" : "--keep") + " needs --checkpoint-dir");
  const std::int64_t capacity = a.memory_limit > 0 ? a.memory_limit : s.cluster.gpu.memory_bytes;
  check_fits(config, capacity, a.force);
  note_overlaps_not_run(config.plan, world.rank());
  exec::TrackedAllocator allocator(capacity);
  exec::set_model_allocator(&allocator);
  exec::Profiler profiler(world.rank());
  exec::ProcessGroups groups(world, config.plan);
  const std::unique_ptr<exec::TokenSource> data =
      exec::training_tokens(s.training->data, static_cast<int>(config.model.vocab), config.seed);
  exec::Trainer trainer(config, groups, *data, &profiler);
  const exec::CheckpointDir checkpoints(a.checkpoint_dir, a.keep);
  exec::arm_checkpoint_fault(fault, world.rank(), [&trainer] { return trainer.steps_done(); });
  if (a.resume) {
    const int step = checkpoints.resume(trainer, world.rank());
    if (world.rank() == 0) std::cout << "resumed from " << checkpoints.rank_file(step, 0) << std::endl;
  }
  const int first_step = trainer.steps_done();
  if (a.save_initial && !a.resume) checkpoints.save(trainer, world);  // step 0: the initial weights
  // the full model exists on every rank while it is initialised and sharded (ZeRO);
  // the report's peaks are those of training
  allocator.reset_peaks();
  profiler.align_origin(world);
  exec::RunRecord record;
  for (int k = first_step; k < a.steps; ++k) {
    exec::watchdog_step(k);
    exec::inject_step_fault(fault, world.rank(), k);
    record.steps.push_back(trainer.step());
    // a non-finite loss stops the run before it is checkpointed (as Megatron's NaN check);
    // every rank holds the same all-reduced loss, so all stop together
    if (!std::isfinite(record.steps.back().loss))
      throw std::runtime_error("step " + std::to_string(k) + ": the loss is " + std::to_string(record.steps.back().loss) +
                               "; the run stops (a learning rate too high, or bad data)");
    if (!a.checkpoint_dir.empty()) checkpoints.save(trainer, world);
    if (world.rank() == 0)
      std::cout << "step " << k << ": loss " << std::setprecision(8) << record.steps.back().loss << std::setprecision(6)
                << ", " << record.steps.back().seconds
                << " s" << (record.steps.back().skipped ? " (skipped: fp16 overflow)" : "") << std::endl;
    if (k == first_step && a.steps > first_step + 1) profiler.clear();  // op times leave out the warm-up step
  }
  exec::set_checkpoint_write_hook(nullptr);
  nlohmann::json report = exec::measured_report(config, s.cluster.gpu, groups, trainer, allocator, profiler, record);
  const nlohmann::json trace = profiler.gather_chrome_trace(world);
  if (world.rank() == 0) {
    report["first_step"] = first_step;  // losses[i] is step first_step + i
    write_outputs(a, report, trace);
    std::cout << "wrote " << a.out << "/measured.json and trace.json: step " << report["time"]["step_s"]
              << " s, " << report["throughput"]["tokens_per_s"] << " tokens/s, peak "
              << report["memory"]["peak_bytes"] << " bytes per rank" << std::endl;
  }
  exec::set_model_allocator(nullptr);
}

void run(const RunArgs& a) {
  check_device(a.device);
  exec::MpiSession session;
  auto world = exec::MpiCommunicator::world();
  try {
    run_ranks(a, *world);
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
  CLI::App* cmd = app.add_subcommand("run", "run a training or inference scenario for real over MPI ranks and measure it");
  cmd->add_option("scenario", a->path, "scenario file (YAML or JSON)")->required();
  cmd->add_option("--set", a->overrides, "override a key, e.g. --set plan.tp=2 (repeatable)");
  cmd->add_option("--steps", a->steps, "training steps (the first is a warm-up left out of the step time)")
      ->check(cli::whole(1, 1'000'000));
  cmd->add_option("--out", a->out, "output folder for measured.json and trace.json");
  cmd->add_option("--seed", a->seed, "seed of the weights and the synthetic data")
      ->check(cli::whole(0, std::numeric_limits<std::int64_t>::max()));
  cmd->add_option("--lr", a->lr, "peak learning rate (default: the scenario's training.optimizer.lr, 1e-3)")
      ->check(cli::number(0, 1e3, true));
  cmd->add_option("--device", a->device, "where the model runs (cuda: checked, the model runs on the CPU kernels)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--memory-limit", a->memory_limit,
                  "bytes per rank (default: the scenario GPU's memory); a plan predicted not to fit is refused")
      ->check(cli::whole(1, std::int64_t{1} << 60));
  cmd->add_flag("--force", a->force, "run a plan even when its training state is predicted not to fit");
  cmd->add_option("--checkpoint-dir", a->checkpoint_dir, "save a checkpoint after every step into this folder");
  cmd->add_flag("--resume", a->resume, "continue from the newest complete checkpoint in --checkpoint-dir");
  cmd->add_option("--keep", a->keep, "checkpoints kept in --checkpoint-dir: the newest N steps (default 1)")
      ->check(cli::whole(1, 1'000'000));
  cmd->add_flag("--save-initial", a->save_initial, "also save step 0 (the initial weights) into --checkpoint-dir");
  cmd->add_option("--watchdog-timeout", a->watchdog_timeout_s,
                  "seconds a rank of a multi-rank job may go without progress (a peer dead or stopped) before "
                  "it ends the job naming itself and its last op (default 60; 0: no watchdog)")
      ->check(cli::number(0, 1e6));
  cmd->callback([a] { run(*a); });
}

}  // namespace twinsim
