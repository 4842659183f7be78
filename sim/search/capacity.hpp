#pragma once
// Capacity planning for training: how many GPUs of a kind train model M on T tokens
// within D days, with which plan, and at what cost.
//
// Compute: C = 6 N T FLOPs (forward 2NT + backward 4NT; Kaplan et al. 2020 §2.1,
// used by Hoffmann et al. 2022 "Chinchilla" §3). The plan search gives each GPU
// count's fastest fitting plan; training time = steps x simulated step time, with
// steps = T / (global_batch x seq_len). The 6NT figure at the simulated model FLOP
// rate is reported beside it as a cross-check (it leaves out attention FLOPs, which
// the simulator's model FLOPs count: Korthikanti et al. 2022 App. A).
#include <array>
// With failures (`goodput`), each plan's time is the steps' over its effective training time
// ratio (sim/goodput/goodput.hpp): the deadline is met with interruptions, checkpoints and
// restarts paid, and the answer says what they cost.
#include <cstdint>
#include <optional>
#include <string>

#include "scenario/scenario.hpp"
#include "sim/goodput/goodput.hpp"
#include "sim/search/plan_search.hpp"

namespace twinsim {

struct CapacityRequest {
  std::string model;            // catalog name (for the report)
  std::string gpu;              // catalog GPU name (for the report)
  // the two resolved by the caller (scenario/load.hpp: catalog_model(model),
  // catalog_cluster_for_gpu(gpu)): sim/ reads no catalog files
  ModelSpec model_spec;
  ClusterSpec node;             // a node type, nodes 0: as many as a plan needs
  double tokens = 0;            // training tokens
  double days = 0;              // wall-clock budget
  double price_per_gpu_hour = 0;  // 0: no cost reported
  std::int64_t seq_len = 4096;
  std::int64_t global_batch = 1024;  // sequences per step
  std::int64_t max_gpus = 16384;
  int max_micro_batch = 4;
  std::optional<GoodputSpec> goodput;  // failures included; none: a failure-free run
};

struct CapacityPlan {
  double flops_6nt = 0;           // 6 N T
  std::int64_t params = 0;        // N
  std::int64_t steps = 0;
  bool feasible = false;          // some GPU count up to max_gpus meets the deadline
  std::int64_t gpus = 0;
  Candidate plan;
  Plan scenario_plan;             // capacity_scenario's, which the plan's overrides change
  std::string stack;              // the software the plan was priced on (its plan's default stack)
  double step_s = 0;              // simulated (event engine)
  double analytic_step_s = 0;
  std::int64_t peak_bytes = 0;
  double days = 0;                // steps x step_s (over the goodput with failures)
  double days_6nt = 0;            // 6NT / (gpus x simulated model FLOP rate per GPU)
  double mfu = 0;
  double gpu_hours = 0;
  double cost = 0;                // gpu_hours x price
  std::string node_type;
  // the step's 80% trust interval (sim/trust/, time.step_s_interval) and its regime
  std::array<double, 2> step_s_interval{0, 0};
  std::string interval_regime;
  // GPUs that meet the deadline when every plan's step lands at its interval's slow end (0: none
  // up to max_gpus), and the days the chosen plan then takes
  std::int64_t gpus_at_slow_end = 0;
  double days_at_slow_end = 0;
  std::optional<GoodputReport> goodput;  // with failures: ETTR, interval, interruptions, their cost
  double failure_free_days = 0;          // steps x step_s
};

// The failures a capacity question assumes, as the CLI's and Python's options give them.
struct CapacityFailures {
  std::string rates = "llama3-h100";  // a published set (hardware/failure_rates.hpp), or "none"
  double storage_GBps = 0;            // all writers together; 0: Llama 3's storage per GPU
  double restart_minutes = kDefaultRestartMinutes;
  double interval_minutes = 0;        // 0: Young/Daly's optimum
  bool sync_checkpoint = false;
};
// The options as a GoodputSpec; none when `rates` is "none". Throws ScenarioError naming
// `field` for a set that is not published.
std::optional<GoodputSpec> capacity_goodput(const CapacityFailures& f, const std::string& field);

// The training scenario a request describes (plan left to the search).
Scenario capacity_scenario(const CapacityRequest& r);

CapacityPlan plan_capacity(const CapacityRequest& r);


}  // namespace twinsim
