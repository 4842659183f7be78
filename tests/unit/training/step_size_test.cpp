// The step size estimate (sim/training/step_size) against the task graphs actually built:
// an upper estimate, not far above, so a refusal is never for a step that would have fit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/training/step_size.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(StepSize, EstimateBoundsTheBuiltGraphFromAbove) {
  struct Case {
    std::vector<std::string> sets;
    Fidelity fidelity;
  };
  const Case cases[] = {
      {{}, Fidelity::fast},                                        // GPT-3 175B, TP8 PP16 DP12
      {{"model.layers=960", "plan.pp=16"}, Fidelity::fast},        // deep stages
      {{"plan.zero=3", "plan.recompute=full"}, Fidelity::fast},   // ZeRO-3 gathers, recompute
      {{"training.global_batch=96"}, Fidelity::full},              // every GPU
  };
  for (const Case& c : cases) {
    const Scenario s = load_scenario_text(default_scenario_text(), c.sets);
    const double built = static_cast<double>(predict_training(s, "", c.fidelity).tasks);
    const double estimated = estimate_step_size(s, c.fidelity).tasks;
    EXPECT_GE(estimated, built) << c.sets.size();
    EXPECT_LE(estimated, 3 * built) << c.sets.size();
  }
}

TEST(StepSize, AMillionLayersIsAnEstimateNotARun) {
  const Scenario s = load_scenario_text(default_scenario_text(), {"model.layers=1000000", "plan.pp=1", "plan.dp=96"});
  const StepSize size = estimate_step_size(s, Fidelity::fast);
  // 16 micro-batches x 1e6 layers x 6 tasks: about 1e8 tasks, 15 GiB
  EXPECT_GT(size.tasks, 9e7);
  EXPECT_GT(size.bytes, 14e9);
}

}  // namespace
}  // namespace twinsim
