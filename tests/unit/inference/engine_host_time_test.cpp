// A serving engine's host time (StackSpec::serving_step_s, serving_sequence_s,
// serving_async): what each pass waits for beyond its kernels, checked against the same
// pass priced with the device alone. Every expected figure is the stack's own numbers
// worked out by hand in the comment beside it.
#include <gtest/gtest.h>

#include <vector>

#include "serving_scenarios.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/speculative.hpp"

namespace twinsim {
namespace {

constexpr double kStepS = 2e-3, kSequenceS = 5e-6;

// Llama-2-7B on one A100, a static batch of 16: 128-token prompts, 64 output tokens.
Scenario device_alone() { return test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 16, 128, 64); }

Scenario with_engine(bool async) {
  Scenario s = device_alone();
  s.stack.serving_step_s = kStepS;
  s.stack.serving_sequence_s = kSequenceS;
  s.stack.serving_async = async;
  return s;
}

// Without async scheduling the GPU waits for the engine every pass: a pass of 16
// sequences grows by 2 ms + 16 x 5 us = 2.08 ms, the prefill (TTFT) and every decode (TPOT)
// alike, and the report carries it as host_s.
TEST(EngineHostTime, ASerialEngineAddsItsTimeToEveryPass) {
  const ServingCostModel device(device_alone()), hosted(with_engine(false));
  const double host = kStepS + 16 * kSequenceS;
  const IterationShape decode = decode_shape(16, 200);
  EXPECT_NEAR(hosted.cost(decode).latency_s() - device.cost(decode).latency_s(), host, 1e-12);
  EXPECT_NEAR(hosted.cost(decode).host_s, host, 1e-15);
  EXPECT_EQ(device.cost(decode).host_s, 0);
  const InferencePrediction a = predict_inference(device_alone()), b = predict_inference(with_engine(false));
  EXPECT_NEAR(b.tpot_s - a.tpot_s, host, 1e-12);
  EXPECT_NEAR(b.ttft_s - a.ttft_s, host, 1e-12);
  EXPECT_NEAR(b.prefill.host_s, host, 1e-15);
}

// With async scheduling the engine prepares a pass while the GPU runs the one before: a pass
// takes the longer of the two. The decode pass of 16 sequences is several ms of weight
// reads on the A100, more than 2.08 ms: nothing shows. An engine of 10x the device's pass
// sets the pace alone: the pass takes the engine's time.
TEST(EngineHostTime, AnAsyncEngineShowsOnlyWhatOutlastsTheDevice) {
  const IterationShape decode = decode_shape(16, 200);
  const double device_s = ServingCostModel(device_alone()).cost(decode).latency_s();
  ASSERT_GT(device_s, kStepS + 16 * kSequenceS);
  const IterationCost hidden = ServingCostModel(with_engine(true)).cost(decode);
  EXPECT_NEAR(hidden.latency_s(), device_s, 1e-12);
  EXPECT_EQ(hidden.host_s, 0);
  Scenario slow = with_engine(true);
  slow.stack.serving_step_s = 10 * device_s;
  slow.stack.serving_sequence_s = 0;
  const IterationCost paced = ServingCostModel(slow).cost(decode);
  EXPECT_NEAR(paced.latency_s(), 10 * device_s, 1e-12);
  EXPECT_NEAR(paced.host_s, 9 * device_s, 1e-12);
}

// A speculative step runs the draft model's passes and the served model's verification as
// one engine step: the engine's time comes once, not once a draft pass (4 proposals here).
TEST(EngineHostTime, ASpeculativeStepPaysItOnce) {
  auto speculative = [](const Scenario& engine) {
    Scenario s = test::serving_scenario("llama2-13b", "dgx-a100-80gb", 1, 1, 1, 16, 128, 64);
    s.stack = engine.stack;
    SpeculativeDecoding spec;
    spec.method = SpeculativeMethod::draft;
    spec.draft_model = device_alone().model;  // Llama-2-7B drafts for Llama-2-13B
    spec.tokens = 4;
    s.inference->speculative = spec;
    return s;
  };
  const PassCostModel device(speculative(device_alone())), hosted(speculative(with_engine(false)));
  const PassShape step = speculative_decode_pass(16, 200, 4, 0);
  EXPECT_NEAR(hosted.cost(step).latency_s() - device.cost(step).latency_s(), kStepS + 16 * kSequenceS, 1e-12);
  EXPECT_NEAR(hosted.draft_s(step), device.draft_s(step), 1e-15);
}

// twinsim serve prices its passes the same way: one request of a 100-token prompt and 5
// output tokens runs one prefill and four decode passes of one sequence, so it finishes
// 5 x (2 ms + 5 us) later than on the device alone.
TEST(EngineHostTime, ServingPassesWaitForTheEngineToo) {
  const std::vector<Request> one = {{0.0, 100, 5}};
  const ServingResult a = simulate_serving(device_alone(), one), b = simulate_serving(with_engine(false), one);
  ASSERT_EQ(a.passes, 5);
  ASSERT_EQ(b.passes, 5);
  EXPECT_NEAR(b.times[0].finish_s - a.times[0].finish_s, 5 * (kStepS + kSequenceS), 1e-12);
  EXPECT_NEAR(b.times[0].first_token_s - a.times[0].first_token_s, kStepS + kSequenceS, 1e-12);
}

}  // namespace
}  // namespace twinsim
