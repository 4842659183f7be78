#include "exec/train/run_job.hpp"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "exec/runtime/data.hpp"
#include "exec/runtime/fault_injection.hpp"
#include "exec/runtime/profiler.hpp"
#include "exec/runtime/termination_notice.hpp"
#include "exec/runtime/backend.hpp"
#include "exec/runtime/watchdog.hpp"
#include "exec/model/tensor.hpp"
#include "exec/train/checkpoint_dir.hpp"
#include "exec/train/inference_run.hpp"
#include "exec/train/memory_estimate.hpp"
#include "exec/train/run_report.hpp"
#include "exec/train/trainer.hpp"
#include "models/report_memory.hpp"
#include "models/report_throughput.hpp"
#include "models/report_time.hpp"
#include "scenario/errors.hpp"

namespace twinsim::exec {

namespace {

TrainConfig train_config(const Scenario& s, const JobOptions& o) {
  TrainConfig c;
  c.model = s.model;
  c.plan = s.plan;
  c.training = *s.training;
  c.seed = o.seed;
  c.lr = o.lr > 0 ? o.lr : static_cast<float>(s.training->optim.lr);
  c.weight_decay = static_cast<float>(s.training->optim.weight_decay);
  return c;
}

// Refuses a plan whose training state does not fit, before the model is allocated.
void check_fits(const TrainConfig& config, std::int64_t capacity, bool force, std::ostream& notes) {
  const StateEstimate e = estimate_training_state(config);
  if (capacity <= 0 || e.total_bytes() <= capacity) return;
  if (force) {
    notes << "warning: --force: " << describe(e, capacity) << std::endl;
    return;
  }
  throw std::runtime_error("plan does not fit: " + describe(e, capacity) +
                           "; refused before allocating (--force runs it anyway)");
}

// The executor reduces every gradient in one call after the backward and gathers ZeRO
// shards right after the optimizer step: it overlaps neither with compute. Said once, so
// a comparison with a simulation of the overlapped plan is not taken at face value.
void note_overlaps_not_run(const Plan& plan, int rank, std::ostream& notes) {
  if (rank != 0 || plan.dp * plan.cp == 1) return;
  if (plan.overlap_grad_reduce || (plan.shards_optimizer() && plan.overlap_param_gather))
    notes << "note: the executor does not overlap data-parallel communication with compute; it runs this plan as "
                "plan.overlap_grad_reduce=false, plan.overlap_param_gather=false (simulate it so to compare)"
             << std::endl;
}

// An inference scenario: one static batch, prefill then greedy decode (inference_run.hpp).
JobOutput serve(const Scenario& s, const JobOptions& o, MpiCommunicator& world) {
  InferenceConfig config{s.model, s.plan, *s.inference, o.seed, o.decode_rounds};
  validate(config);
  const std::unique_ptr<Allocator> device_memory =
      current_backend().make_device_allocator(o.memory_limit > 0 ? o.memory_limit : s.cluster.gpu.memory_bytes);
  Allocator& allocator = *device_memory;
  set_model_allocator(&allocator);
  Profiler profiler(world.rank());
  const std::unique_ptr<Communicator> device_world = current_backend().device_communicator(world);
  ProcessGroups groups(device_world ? *device_world : world, config.plan);
  SyntheticTokens prompts(config.seed, static_cast<int>(config.model.vocab));
  profiler.align_origin(world);
  const InferenceRecord record = run_inference(config, groups, prompts, &profiler, allocator, s.cluster.gpu);
  JobOutput out;
  out.report = measured_inference_report(config, groups, record, profiler);
  out.trace = profiler.gather_chrome_trace(world);
  set_model_allocator(nullptr);
  set_host_allocator(nullptr);
  if (world.rank() != 0) return out;  // the report and trace are rank 0's
  const nlohmann::json& m = out.report["inference"];
  std::ostringstream line;
  line << "TTFT " << m["ttft_s"] << " s, TPOT " << m["tpot_s"] << " s, " << m["output_tokens_per_s"]
       << " output tokens/s, KV cache " << m["kv_cache_bytes_per_token"] << " bytes per token";
  out.summary = line.str();
  return out;
}

JobOutput train(const Scenario& s, const JobOptions& o, MpiCommunicator& world, std::ostream& progress,
                std::ostream& notes) {
  const FaultPlan fault = fault_plan_from_environment();
  const TrainConfig config = train_config(s, o);
  if (o.resume && o.checkpoint_dir.empty()) throw std::invalid_argument("--resume needs --checkpoint-dir");
  if ((o.save_initial || o.keep != 1) && o.checkpoint_dir.empty())
    throw std::invalid_argument(std::string(o.save_initial ? "--save-initial" : "--keep") + " needs --checkpoint-dir");
  const std::int64_t capacity = o.memory_limit > 0 ? o.memory_limit : s.cluster.gpu.memory_bytes;
  check_fits(config, capacity, o.force, notes);
  note_overlaps_not_run(config.plan, world.rank(), notes);
  const std::unique_ptr<Allocator> device_memory = current_backend().make_device_allocator(capacity);
  Allocator& allocator = *device_memory;
  set_model_allocator(&allocator);
  // plan.offload_optimizer's states: the host's, not the GPU's
  const std::unique_ptr<Allocator> host_allocation = current_backend().make_host_allocator();
  Allocator& host_memory = *host_allocation;
  set_host_allocator(&host_memory);
  Profiler profiler(world.rank());
  const std::unique_ptr<Communicator> device_world = current_backend().device_communicator(world);
  ProcessGroups groups(device_world ? *device_world : world, config.plan);
  const std::unique_ptr<TokenSource> data = training_tokens(s.training->data, static_cast<int>(config.model.vocab), config.seed);
  Trainer trainer(config, groups, *data, &profiler);
  const CheckpointDir checkpoints(o.checkpoint_dir, o.keep);
  arm_checkpoint_fault(fault, world.rank(), [&trainer] { return trainer.steps_done(); });
  if (o.resume) {
    const int step = checkpoints.resume(trainer, world.rank());
    if (world.rank() == 0) progress << "resumed from " << checkpoints.rank_file(step, 0) << std::endl;
  }
  const int first_step = trainer.steps_done();
  if (first_step >= o.steps)  // nothing to run: refused, not a report of zeros
    throw ScenarioError("--steps", std::to_string(o.steps),
                        "is not past the checkpoint resumed, which holds " + std::to_string(first_step) +
                            " steps: ask for more (--steps " + std::to_string(first_step + 1) + " or above)");
  if (o.save_initial && !o.resume) checkpoints.save(trainer, world);  // step 0: the initial weights
  // the full model exists on every rank while it is initialised and sharded (ZeRO);
  // the report's peaks are those of training
  allocator.reset_peaks();
  host_memory.reset_peaks();
  RunMetrics metrics(o.metrics, groups, notes);
  profiler.align_origin(world);
  RunRecord record;
  for (int k = first_step; k < o.steps; ++k) {
    watchdog_step(k);
    inject_step_fault(fault, world.rank(), k);
    const auto started = std::chrono::steady_clock::now();
    record.steps.push_back(trainer.step());
    const StepResult& r = record.steps.back();
    metrics.after_step(k, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), r.loss,
                       allocator.stats());
    // fp16 only reaches here with a non-finite loss (the trainer stops fp32 and bf16 before
    // the update, Trainer::stop_if_not_finite; fp16's loss scaler skips the update): the
    // run stops before it is checkpointed; every rank holds the same loss, so all stop
    if (!std::isfinite(r.loss))
      throw std::runtime_error("step " + std::to_string(k) + ": the loss is " + std::to_string(r.loss) +
                               "; the run stops (a learning rate too high, or bad data)");
    if (!o.checkpoint_dir.empty()) checkpoints.save(trainer, world);
    if (world.rank() == 0)
      progress << "step " << k << ": loss " << std::setprecision(8) << r.loss << std::setprecision(6) << ", "
               << r.seconds << " s" << (r.skipped ? " (skipped: fp16 overflow)" : "") << std::endl;
    if (k == first_step && o.steps > first_step + 1) profiler.clear();  // op times leave out the warm-up step
  }
  set_checkpoint_write_hook(nullptr);
  JobOutput out;
  out.report = measured_report(config, s.cluster.gpu, groups, trainer, allocator, profiler, record);
  out.trace = profiler.gather_chrome_trace(world);
  set_model_allocator(nullptr);
  set_host_allocator(nullptr);
  if (world.rank() != 0) return out;  // the report and trace are rank 0's
  out.report["first_step"] = first_step;  // losses[i] is step first_step + i
  std::ostringstream line;
  const Throughput throughput = read_throughput_section(out.report["throughput"], "measured");
  const MemorySection memory = read_memory_section(out.report["memory"], "measured");
  // printed as JSON prints them (the report's own digits)
  const TimeSection time = read_time_section(out.report["time"], "measured");
  line << "step " << nlohmann::json(time.step_s) << " s, " << nlohmann::json(throughput.tokens_per_s)
       << " tokens/s, peak " << memory.peak_bytes << " bytes per rank";
  out.summary = line.str();
  return out;
}

}  // namespace

JobOutput run_job(const Scenario& s, const JobOptions& o, MpiCommunicator& world, std::ostream& progress,
                  std::ostream& notes) {
  if (world.size() != s.plan.world_size())
    throw ScenarioError("plan", "tp*pp*cp*dp=" + std::to_string(s.plan.world_size()),
                        "needs that many MPI ranks (mpirun -np " + std::to_string(s.plan.world_size()) +
                            "); this job has " + std::to_string(world.size()));
  if (world.size() > 1) install_termination_notice(world.rank());
  const Watchdog watchdog(world.rank(), world.size() > 1 ? o.watchdog_timeout_s : 0);
  if (!s.is_training() && o.metrics.port != 0)
    throw ScenarioError("--metrics-port", std::to_string(o.metrics.port),
                        "applies to training runs (an inference run is one static batch)");
  return s.is_training() ? train(s, o, world, progress, notes) : serve(s, o, world);
}

}  // namespace twinsim::exec
