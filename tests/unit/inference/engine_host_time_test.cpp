// A serving engine's host time (StackSpec::serving_step_s, serving_sequence_s,
// serving_async): what each pass waits for beyond its kernels, checked against the same
// pass priced with the device alone. Every expected figure is the stack's own numbers
// worked out by hand in the comment beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
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

// A node's CPU prices the engine's host work (HostSpec::cpu_time_scale): the serial engine's
// 2.08 ms a pass of 16 (above) on a host at 2.75x an x86 server's time is 2.75 x 2.08 = 5.72 ms,
// and the pass is 5.72 - 2.08 = 3.64 ms longer than on the x86 host.
TEST(EngineHostTime, ASlowerHostCpuScalesTheEnginesTime) {
  Scenario slow = with_engine(false);
  slow.cluster.host.cpu_time_scale = 2.75;
  const IterationShape decode = decode_shape(16, 200);
  const IterationCost x86 = ServingCostModel(with_engine(false)).cost(decode);
  const IterationCost grace = ServingCostModel(slow).cost(decode);
  EXPECT_NEAR(grace.host_s, 5.72e-3, 1e-12);
  EXPECT_NEAR(grace.latency_s() - x86.latency_s(), 3.64e-3, 1e-12);
  // the frontend's 1 ms a request (serving_request_s) likewise: 2.75 ms. One request alone: its
  // first token comes 1.75 ms (the frontend) + 1.75 x (2 ms + 5 us) = 3.50875 ms (its prefill
  // pass's host time) later than on the x86 host: 5.25875 ms
  Scenario x86_front = with_engine(false), grace_front = slow;
  x86_front.stack.serving_request_s = grace_front.stack.serving_request_s = 1e-3;
  const std::vector<Request> one = {{0.0, 100, 5}};
  const ServingResult a = simulate_serving(x86_front, one), b = simulate_serving(grace_front, one);
  EXPECT_NEAR(b.times[0].first_token_s - a.times[0].first_token_s, 1.75e-3 + 1.75 * 2.005e-3, 1e-12);
}

// The catalog's racks: Grace's 2.75 on a GB200 NVL72 (NVIDIA/TransformerEngine#2053: a
// torch.nn.Linear forward's CPU time, 37.08 us against a DGX H100's 13.48 us) and a GB300 NVL72
// (the same Grace), an x86 host's 1 on the DGX B200. TensorRT-LLM 1.0 (stack trtllm-v1: 10.68 us
// a sequence, async) decoding 2,048 sequences of Qwen3-30B-A3B: the host takes 2,048 x 10.68 us =
// 21.87264 ms a pass on the B200, near the device's pass (weights, the routed experts and 2,048
// caches of 192 tokens; printed), the pass the longer of the two; on the GB200 2.75 x 21.87264
// = 60.14976 ms (29.37 us a sequence, TensorRT-LLM PR #10273's 45.11 ms a step of 1,536 sequences on a GB200), longer
// than that same pass on the same die, so the pass takes the host's time.
TEST(EngineHostTime, AGb200PassOfManySequencesWaitsForGrace) {
  auto trtllm = [](const std::string& node) {
    return load_scenario_text("model: qwen3-30b-a3b\ncluster: {preset: " + node +
                              ", gpus_per_node: 1, nodes: 1}\ninference: {prompt_len: 128, output_len: 128, batch: "
                              "2048, weight_dtype: nvfp4, kv_dtype: fp8}\nplan: {tp: 1, pp: 1}\nstack: trtllm-v1\n");
  };
  const Scenario b200 = trtllm("dgx-b200"), gb200 = trtllm("gb200-nvl72");
  EXPECT_EQ(b200.cluster.host.cpu_time_scale, 1);
  EXPECT_EQ(gb200.cluster.host.cpu_time_scale, 2.75);
  EXPECT_EQ(test::serving_scenario("llama3-8b", "gb300-nvl72", 1, 1, 1, 8, 128, 128).cluster.host.cpu_time_scale, 2.75);
  const IterationShape decode = decode_shape(2048, 192);
  Scenario b200_device = b200;
  b200_device.stack.serving_sequence_s = 0;
  const double device_s = ServingCostModel(b200_device).cost(decode).latency_s();
  std::printf("  B200 device pass %.3f ms, host 21.873 ms; GB200 host 60.150 ms\n", device_s * 1e3);
  // the B200's pass: the longer of its device's and its host's 21.87264 ms
  EXPECT_NEAR(ServingCostModel(b200).cost(decode).latency_s(), std::max(device_s, 21.87264e-3), 1e-9);
  const IterationCost on_gb200 = ServingCostModel(gb200).cost(decode);
  ASSERT_LT(on_gb200.latency_s() - on_gb200.host_s, 60.14976e-3);
  EXPECT_NEAR(on_gb200.latency_s(), 60.14976e-3, 1e-9);
}

// An engine that replays CUDA graphs only for decode-only passes (serving_eager_prefill,
// TensorRT-LLM 1.0's PyTorch backend) issues a pass with a prompt chunk op by op: each op of
// the pass costs host_torch_op_s on the host. Llama-2-7B, one stage: every op of op_times'
// list, each call counted (32 layers' ops, the embedding, the head), at 10 us an op; the serial
// engine (2 ms + 16 x 5 us) waits for it on top. A decode-only pass (graphed) is unchanged, and
// on a host at 2.75x the eager part scales with the rest: 2.75 x (2.08 ms + ops x 10 us).
TEST(EngineHostTime, APassWithAPromptChunkRunsEagerOpByOp) {
  Scenario eager = with_engine(false);
  eager.stack.serving_eager_prefill = true;
  eager.stack.host_torch_op_s = 10e-6;
  IterationShape mixed = decode_shape(15, 200);
  mixed.add_chunk(0, 128, true);  // 15 decodes and one 128-token prompt: 16 sequences
  const ServingCostModel graphed(with_engine(false)), model(eager);
  double ops = 0;
  for (const PassOpTime& op : model.op_times(mixed)) ops += op.count;
  // a Llama layer has at least its norms, QKV, attention, output projection, MLP GEMMs and activation
  ASSERT_GE(ops, 32 * 8 + 2);
  std::printf("  Llama-2-7B eager pass: %.0f ops\n", ops);
  const double host = kStepS + 16 * kSequenceS;
  EXPECT_NEAR(model.cost(mixed).host_s, host + ops * 10e-6, 1e-12);
  EXPECT_NEAR(model.cost(mixed).latency_s() - graphed.cost(mixed).latency_s(), ops * 10e-6, 1e-12);
  const IterationShape decode = decode_shape(16, 200);
  EXPECT_NEAR(model.cost(decode).host_s, host, 1e-15);
  Scenario grace = eager;
  grace.cluster.host.cpu_time_scale = 2.75;
  EXPECT_NEAR(ServingCostModel(grace).cost(mixed).host_s, 2.75 * (host + ops * 10e-6), 1e-12);
}

}  // namespace
}  // namespace twinsim
