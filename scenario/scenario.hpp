#pragma once
// A loaded, validated scenario: model x cluster x plan x workload (SCENARIO.md).
// Both the simulator and the executor start from this one description.
#include <optional>
#include <string>

#include "hardware/cluster_spec.hpp"
#include "hardware/reliability.hpp"
#include "hardware/stack_spec.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"
#include "models/workload.hpp"

namespace twinsim {

struct Scenario {
  std::string name;
  ModelSpec model;
  ClusterSpec cluster;
  StackSpec stack;  // the software that runs the plan on the cluster
  // The scenario named no stack and the loader chose its workload's (scenario/default_stack.hpp):
  // the report says "(default)" beside the stack's name.
  bool stack_is_default = false;
  Plan plan;
  std::optional<TrainingWorkload> training;   // exactly one of training / inference
  std::optional<InferenceWorkload> inference;
  std::optional<GoodputSpec> goodput;  // training only: failures, checkpoints, restarts (sim/goodput)

  bool is_training() const { return training.has_value(); }
};

}  // namespace twinsim
