#pragma once
// What a long training run loses to failures (sim/goodput/README.md): how often each kind
// of component interrupts a synchronous job, how fast the cluster's storage takes and gives
// back a checkpoint, and how long a restart takes. The scenario's `goodput:` section
// (SCENARIO.md); published rate sets in hardware/failure_rates.hpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinsim {

// What a component's rate counts per: every GPU, every node, or the job as a whole (a
// software bug hits the job once, however many GPUs run it).
enum class FailureScope { gpu, node, job };

struct ComponentFailureRate {
  std::string component;  // "faulty_gpu", "gpu_hbm", "nic", "software_bug", ...
  FailureScope scope = FailureScope::gpu;
  double per_hour = 0;    // interruptions per unit-hour (per GPU-, node- or job-hour)
};

struct FailureRates {
  std::string name;  // a published set's name, or "custom"
  std::vector<ComponentFailureRate> components;  // unexpected interruptions
  double planned_per_hour = 0;  // planned interruptions of the job (maintenance, upgrades)
};

// A restart's default: detecting the failure, rescheduling on healthy nodes, starting the
// processes and joining the collectives. No large run publishes its own; 10 minutes is an
// assumption (sim/goodput/README.md shows how the Llama 3 judge moves with it).
inline constexpr double kDefaultRestartMinutes = 10;

// The run's checkpointing and restart: storage bandwidth is the cluster's aggregate (every
// rank writes its shard at once); an asynchronous checkpoint stalls the step only while each
// GPU copies its shard to host memory, the write to storage overlapping the next steps.
struct GoodputSpec {
  FailureRates failures;
  // aggregate, all writers (readers) together; 0: the per-GPU share of Llama 3's storage
  // (hardware/failure_rates.hpp) times the job's GPUs
  double storage_write_Bps = 0;
  double storage_read_Bps = 0;
  bool async_checkpoint = true;
  double checkpoint_interval_s = 0;  // 0: Young/Daly's optimum
  double restart_s = 0;              // detect, reschedule, start processes, join the collectives
  double rewarm_s = 0;               // the first steps after a restart running slow (compile, caches)
  double train_tokens = 0;           // 0: no time to train reported
  double price_per_gpu_hour = 0;     // 0: no cost reported
};

}  // namespace twinsim
