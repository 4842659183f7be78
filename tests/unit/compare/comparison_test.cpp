// compare/: hand-made report pairs whose errors are worked out by hand below.
#include <gtest/gtest.h>

#include "compare/comparison.hpp"

namespace twinsim::compare {
namespace {

using nlohmann::json;

// One layer's worth of ops on the simulator's side: qkv 2 ms and fc1 1 ms per call,
// 8 calls per step (2 layers x 4 micro-batches); step 0.1 s.
json simulated() {
  return json::parse(R"({
    "time": {"step_s": 0.1, "ops": [
      {"name": "attn.qkv.fwd", "time_s": 0.002, "count": 8},
      {"name": "mlp.fc1.fwd", "time_s": 0.001, "count": 8},
      {"name": "mlp.fc1.bwd_dgrad", "time_s": 0.001, "count": 8},
      {"name": "attn.rope.fwd", "time_s": 0.0004, "count": 8}]},
    "memory": {"peak_bytes": 1000, "breakdown": {"params": 400, "grads": 400, "optimizer": 0,
               "activations": 200, "kv_cache": 0, "buffers": 0}}})");
}

// The executor's side: per layer, qkv measured 2.5 ms (layer 0) and 3.5 ms (layer 1) per
// call, 4 calls each; fc1 fwd 1 ms; fc1 bwd_dgrad 1.5 ms; no rope; one op only it runs.
json measured() {
  return json::parse(R"({
    "time": {"step_s": 0.125},
    "ops": {
      "layer0.attn.qkv.fwd": {"count_per_step": 4, "mean_s_per_step": 0.010},
      "layer1.attn.qkv.fwd": {"count_per_step": 4, "mean_s_per_step": 0.014},
      "layer0.mlp.fc1.fwd": {"count_per_step": 4, "mean_s_per_step": 0.004},
      "layer1.mlp.fc1.fwd": {"count_per_step": 4, "mean_s_per_step": 0.004},
      "layer0.mlp.fc1.bwd_dgrad": {"count_per_step": 4, "mean_s_per_step": 0.006},
      "layer1.mlp.fc1.bwd_dgrad": {"count_per_step": 4, "mean_s_per_step": 0.006},
      "optimizer.step": {"count_per_step": 1, "mean_s_per_step": 0.001}},
    "memory": {"peak_bytes": 1250, "breakdown": {"params": 400, "grads": 400, "optimizer": 0,
               "activations": 450, "kv_cache": 0, "buffers": 0}}})");
}

const OpRow& row(const Comparison& c, const std::string& name) {
  for (const OpRow& r : c.ops)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(StripLayerPrefix, OnlyALayerNumberIsStripped) {
  EXPECT_EQ(strip_layer_prefix("layer12.mlp.fc1.fwd"), "mlp.fc1.fwd");
  EXPECT_EQ(strip_layer_prefix("mlp.fc1.fwd"), "mlp.fc1.fwd");
  EXPECT_EQ(strip_layer_prefix("layer.x"), "layer.x");
  EXPECT_EQ(strip_layer_prefix("layers3.x"), "layers3.x");
  EXPECT_EQ(strip_layer_prefix("layer3"), "layer3");
}

TEST(OpCategory, ModuleAndPass) {
  EXPECT_EQ(op_category("layer0.attn.qkv.fwd"), "attn fwd");
  EXPECT_EQ(op_category("mlp.fc1.bwd_wgrad"), "mlp bwd");
  EXPECT_EQ(op_category("mlp.fc1.recompute"), "mlp recompute");
  EXPECT_EQ(op_category("optimizer.step"), "optimizer");
}

TEST(CompareReports, StepTimeErrors) {
  const Comparison c = compare_reports(simulated(), measured());
  EXPECT_DOUBLE_EQ(c.step_s.abs_error(), 0.1 - 0.125);
  EXPECT_NEAR(c.step_s.rel_error(), -0.2, 1e-12);  // 0.1 / 0.125 - 1
}

TEST(CompareReports, MeasuredLayersMergeIntoOnePerCallMean) {
  const Comparison c = compare_reports(simulated(), measured());
  const OpRow& qkv = row(c, "attn.qkv.fwd");
  // (10 + 14 ms) over 8 calls = 3 ms per call, against 2 ms predicted
  EXPECT_NEAR(qkv.per_call_s.measured, 0.003, 1e-12);
  EXPECT_NEAR(qkv.per_call_s.rel_error(), -1.0 / 3, 1e-12);
  EXPECT_NEAR(qkv.per_step_s.predicted, 0.016, 1e-12);
  EXPECT_NEAR(qkv.per_step_s.measured, 0.024, 1e-12);
}

TEST(CompareReports, LargestGapFirstAndOneSidedOps) {
  const Comparison c = compare_reports(simulated(), measured());
  // per-step gaps: qkv -8 ms, fc1 bwd -4 ms, rope +3.2 ms (not measured), optimizer -1 ms, fc1 fwd 0
  ASSERT_EQ(c.ops.size(), 5u);
  EXPECT_EQ(c.ops[0].name, "attn.qkv.fwd");
  EXPECT_EQ(c.ops[1].name, "mlp.fc1.bwd_dgrad");
  EXPECT_EQ(c.ops[2].name, "attn.rope.fwd");
  EXPECT_EQ(c.ops.back().name, "mlp.fc1.fwd");
  EXPECT_TRUE(row(c, "attn.rope.fwd").predicted_only);
  EXPECT_TRUE(row(c, "optimizer.step").measured_only);
  EXPECT_NEAR(row(c, "optimizer.step").per_step_s.measured, 0.001, 1e-12);
}

TEST(CompareReports, CategoriesSumTheirOps) {
  const Comparison c = compare_reports(simulated(), measured());
  for (const NamedPair& p : c.op_categories)
    if (p.name == "attn fwd") {
      EXPECT_NEAR(p.value.predicted, 0.016 + 0.0032, 1e-12);  // qkv + rope
      EXPECT_NEAR(p.value.measured, 0.024, 1e-12);
    }
  EXPECT_EQ(c.op_categories.front().name, "attn fwd");  // -4.8 ms, then mlp bwd -4 ms
}

TEST(CompareReports, MemoryPerCategory) {
  const Comparison c = compare_reports(simulated(), measured());
  EXPECT_NEAR(c.peak_bytes.rel_error(), -0.2, 1e-12);
  ASSERT_EQ(c.memory.size(), 6u);
  EXPECT_EQ(c.memory[3].name, "activations");
  EXPECT_NEAR(c.memory[3].value.rel_error(), 200.0 / 450 - 1, 1e-12);
  EXPECT_EQ(c.memory[4].value.rel_error(), 0);  // kv_cache: 0 against 0
}

TEST(CompareReports, BreakdownPartsBecomeStepOps) {
  json sim = simulated();
  sim["time"]["breakdown"] = {{"optimizer_s", 0.0015}, {"dp_comm_exposed_s", 0}};
  const Comparison c = compare_reports(sim, measured());
  const OpRow& opt = row(c, "optimizer.step");
  EXPECT_FALSE(opt.measured_only);
  EXPECT_NEAR(opt.per_step_s.rel_error(), 0.5, 1e-12);  // 1.5 ms against 1 ms
  for (const OpRow& r : c.ops) EXPECT_NE(r.name, "dp.grad_reduce");  // 0 s: not an op
}

TEST(CompareReports, MissingKeyIsNamed) {
  json m = measured();
  m["memory"].erase("peak_bytes");
  try {
    compare_reports(simulated(), m);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("memory.peak_bytes"), std::string::npos);
  }
}

TEST(CompareReports, WithoutOpsOnlyStepAndMemory) {
  json m = measured();
  m.erase("ops");
  const Comparison c = compare_reports(simulated(), m);
  EXPECT_TRUE(c.ops.empty());
  EXPECT_NEAR(c.step_s.measured, 0.125, 1e-12);
}

TEST(ToJson, UnmeasuredRelativeErrorIsNull) {
  const json j = to_json(compare_reports(simulated(), measured()));
  for (const json& op : j["ops"])
    if (op["name"] == "attn.rope.fwd") {
      EXPECT_TRUE(op["per_step_s"]["rel_error"].is_null());
    }
  EXPECT_NEAR(j["memory"]["breakdown"]["activations"]["measured"].get<double>(), 450, 0);
}

}  // namespace
}  // namespace twinsim::compare
