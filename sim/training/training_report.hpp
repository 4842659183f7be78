#pragma once
// One simulated training step: the "time" and "throughput" objects of SCENARIO.md, with
// a breakdown that sums to the step time, and the per-op times behind it.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/report_ops.hpp"
#include "models/report_throughput.hpp"
#include "models/report_time.hpp"
#include "scenario/scenario.hpp"
#include "sim/engine/exchange.hpp"
#include "sim/engine/timeline.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {

// Where one GPU's step time went: TimeBreakdown, in the report contract (models/report_time.hpp).

// Busy fractions of the reported GPU over the step.
struct Utilization {
  double compute = 0;        // compute stream busy (any category)
  double hbm_bandwidth = 0;  // bytes its kernels move / (step x peak HBM bandwidth)
  double tp_link = 0;        // TP collectives (NVLink) busy
  double dp_link = 0;        // data-parallel collectives busy
  double pp_link = 0;        // the busiest pipeline link of its stage
};

struct OpPrediction {
  std::string name;   // e.g. "attn.qkv.fwd" — the executor times the same names
  double time_s = 0;  // one occurrence: one layer, one micro-batch, one GPU
  int count = 0;      // occurrences per step on the reported GPU
  bool extrapolated = false;  // priced beyond the GPU's or link's measured figures
  double hbm_bytes = 0;       // one occurrence's HBM traffic (compute ops; 0 for collectives)
  int launches = 0;           // kernels one occurrence launches (0: a collective)
};

struct TrainingPrediction {
  double step_s = 0;
  int reported_stage = 0;  // the stage whose GPU the breakdown describes
  TimeBreakdown breakdown;
  std::vector<TimeBreakdown> stage_breakdowns;
  Throughput throughput;
  Utilization utilization;
  double model_flops = 0;     // per step, all GPUs (Korthikanti et al. 2022, App. A)
  double hardware_flops = 0;  // plus recomputation
  std::vector<OpPrediction> ops;
  std::size_t tasks = 0;
  std::uint64_t events = 0;
  int simulated_gpus = 0;  // GPUs the engine ran (fast: one per stage; full: after symmetry)
  // the transformer layers' GEMM clock under the GPU's power limit, against the curves'
  // (sim/cost/power_limit.hpp; the lowest of the layer kinds); 1: not slowed
  double gemm_clock = 1;
};

// Model FLOPs of one step: forward and backward once, attention and logits included.
double model_flops_per_step(const Scenario& s);

TrainingPrediction predict_training(const Scenario& s, const std::string& trace_path = "",
                                    Fidelity fidelity = Fidelity::fast);
// The same, the step's simulation split over the processes of `exchange` (mpirun): each
// simulates a contiguous block of pipeline stages (sim/engine/simulator.hpp); every process
// returns the same prediction, which equals the single process's. Only process 0 writes
// the trace.
TrainingPrediction predict_training(const Scenario& s, const std::string& trace_path, Fidelity fidelity,
                                    engine::Exchange& exchange);

nlohmann::json time_json(const TrainingPrediction& p);
nlohmann::json to_json(const Utilization& u);

}  // namespace twinsim
