// compare/: hand-made report pairs whose errors are worked out by hand below.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

// ---- inference: TTFT, TPOT and the ops of each phase per pass ----

// The simulator's side of an inference batch: TTFT 20 ms, TPOT 4 ms; prefill qkv 1 ms per
// call x 4 layers, logits 2 ms, the TP logits gather only it has; decode qkv 0.2 ms and
// attention core 0.1 ms per call x 4 layers.
json simulated_inference() {
  return json::parse(R"({
    "inference": {"ttft_s": 0.020, "tpot_s": 0.004, "output_tokens_per_s": 1000,
                  "kv_cache_bytes_per_token": 4096, "max_batch": 12,
      "prefill": {"latency_s": 0.020, "ops": [
        {"name": "attn.qkv.fwd", "time_s": 0.001, "count": 4},
        {"name": "head.logits.fwd", "time_s": 0.002, "count": 1},
        {"name": "head.gather.fwd", "time_s": 0.0005, "count": 1}]},
      "decode": {"passes": 5, "mean_latency_s": 0.004, "ops": [
        {"name": "attn.qkv.fwd", "time_s": 0.0002, "count": 4},
        {"name": "attn.core.fwd", "time_s": 0.0001, "count": 4}]}},
    "memory": {"peak_bytes": 3000, "breakdown": {"params": 2000, "grads": 0, "optimizer": 0,
               "activations": 200, "kv_cache": 800, "buffers": 0}}})");
}

// The executor's side: TTFT 25 ms, TPOT 5 ms; prefill qkv 1, 1, 2, 2 ms in layers 0-3,
// logits 3 ms, sampling only it profiles; decode qkv 0.25 ms per call in every layer,
// attention core 0.1 ms.
json measured_inference() {
  return json::parse(R"({
    "inference": {"ttft_s": 0.025, "tpot_s": 0.005, "output_tokens_per_s": 800,
                  "kv_cache_bytes_per_token": 4096, "decode_steps_s": [0.005, 0.005, 0.006, 0.004, 0.005],
      "prefill": {"passes": 1, "ops": {
        "layer0.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.001},
        "layer1.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.001},
        "layer2.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.002},
        "layer3.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.002},
        "head.logits.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.003},
        "head.sample.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.0001}}},
      "decode": {"passes": 5, "ops": {
        "layer0.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025},
        "layer1.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025},
        "layer2.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025},
        "layer3.attn.qkv.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.00025},
        "layer0.attn.core.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.0001},
        "layer1.attn.core.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.0001},
        "layer2.attn.core.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.0001},
        "layer3.attn.core.fwd": {"count_per_pass": 1, "mean_s_per_pass": 0.0001}}}},
    "ops": {"layer0.attn.qkv.fwd": {"count": 5, "mean_total_s": 0.002, "max_total_s": 0.002}},
    "memory": {"peak_bytes": 3200, "breakdown": {"params": 2000, "grads": 0, "optimizer": 0,
               "activations": 100, "kv_cache": 1000, "buffers": 100}}})");
}

const OpRow& row(const std::vector<OpRow>& ops, const std::string& name) {
  for (const OpRow& r : ops)
    if (r.name == name) return r;
  throw std::runtime_error("no row " + name);
}

TEST(CompareInference, TtftTpotAndThroughput) {
  const Comparison c = compare_reports(simulated_inference(), measured_inference());
  ASSERT_TRUE(c.inference.has_value());
  const InferenceComparison& inf = *c.inference;
  EXPECT_NEAR(inf.ttft_s.abs_error(), -0.005, 1e-15);
  EXPECT_NEAR(inf.ttft_s.rel_error(), -0.2, 1e-12);  // 20 / 25 - 1
  EXPECT_NEAR(inf.tpot_s.abs_error(), -0.001, 1e-15);
  EXPECT_NEAR(inf.tpot_s.rel_error(), -0.2, 1e-12);  // 4 / 5 - 1
  EXPECT_NEAR(inf.output_tokens_per_s.rel_error(), 0.25, 1e-12);  // 1000 / 800 - 1
  EXPECT_EQ(inf.kv_cache_bytes_per_token.rel_error(), 0);
  // a case is judged by TPOT, and says so
  EXPECT_EQ(&c.step_or_tpot_s(), &inf.tpot_s);
  EXPECT_STREQ(c.step_or_tpot_name(), "TPOT");
  EXPECT_STREQ(compare_reports(simulated(), measured()).step_or_tpot_name(), "step");
}

TEST(CompareInference, PrefillOpsPerPass) {
  const Comparison c = compare_reports(simulated_inference(), measured_inference());
  const PassComparison& p = c.inference->prefill;
  // qkv: (1 + 1 + 2 + 2 ms) over 4 calls = 1.5 ms per call against 1 ms; 4 vs 6 ms per pass
  const OpRow& qkv = row(p.ops, "attn.qkv.fwd");
  EXPECT_DOUBLE_EQ(qkv.calls, 4);
  EXPECT_NEAR(qkv.per_call_s.measured, 0.0015, 1e-15);
  EXPECT_NEAR(qkv.per_step_s.predicted, 0.004, 1e-15);
  EXPECT_NEAR(qkv.per_step_s.measured, 0.006, 1e-15);
  EXPECT_NEAR(qkv.per_call_s.rel_error(), -1.0 / 3, 1e-12);
  // gaps: qkv -2 ms, logits -1 ms, gather +0.5 ms (not measured), sample -0.1 ms (not predicted)
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.ops[0].name, "attn.qkv.fwd");
  EXPECT_EQ(p.ops[1].name, "head.logits.fwd");
  EXPECT_EQ(p.ops[2].name, "head.gather.fwd");
  EXPECT_EQ(p.ops[3].name, "head.sample.fwd");
  EXPECT_TRUE(row(p.ops, "head.gather.fwd").predicted_only);
  EXPECT_TRUE(row(p.ops, "head.sample.fwd").measured_only);
  // categories: attn fwd (-2 ms) before head fwd (2.5 - 3.1 ms = -0.6 ms)
  ASSERT_EQ(p.op_categories.size(), 2u);
  EXPECT_EQ(p.op_categories[0].name, "attn fwd");
  EXPECT_EQ(p.op_categories[1].name, "head fwd");
  EXPECT_NEAR(p.op_categories[1].value.predicted, 0.0025, 1e-15);
  EXPECT_NEAR(p.op_categories[1].value.measured, 0.0031, 1e-15);
}

TEST(CompareInference, DecodeOpsPerPass) {
  const Comparison c = compare_reports(simulated_inference(), measured_inference());
  const PassComparison& d = c.inference->decode;
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].name, "attn.qkv.fwd");  // 0.8 against 1 ms per pass
  EXPECT_NEAR(d.ops[0].per_step_s.rel_error(), -0.2, 1e-12);
  EXPECT_EQ(d.ops[1].name, "attn.core.fwd");  // exact
  EXPECT_NEAR(d.ops[1].per_step_s.abs_error(), 0, 1e-15);
  EXPECT_FALSE(d.ops[1].predicted_only || d.ops[1].measured_only);
  // the training-shaped top-level ops play no part in an inference comparison
  EXPECT_TRUE(c.ops.empty());
}

TEST(CompareInference, MemoryPerCategory) {
  const Comparison c = compare_reports(simulated_inference(), measured_inference());
  EXPECT_NEAR(c.peak_bytes.rel_error(), 3000.0 / 3200 - 1, 1e-12);
  ASSERT_EQ(c.memory.size(), 6u);
  EXPECT_EQ(c.memory[0].name, "params");
  EXPECT_EQ(c.memory[0].value.rel_error(), 0);
  EXPECT_EQ(c.memory[4].name, "kv_cache");
  EXPECT_NEAR(c.memory[4].value.rel_error(), -0.2, 1e-12);  // 800 against 1000
  EXPECT_NEAR(c.memory[3].value.rel_error(), 1.0, 1e-12);   // activations 200 against 100
  EXPECT_NEAR(c.memory[5].value.rel_error(), -1.0, 1e-12);  // buffers 0 against 100
}

TEST(CompareInference, WithoutPhaseOpsOnlyTimesAndMemory) {
  json m = measured_inference();
  m["inference"].erase("decode");
  const Comparison c = compare_reports(simulated_inference(), m);
  EXPECT_FALSE(c.inference->prefill.ops.empty());
  EXPECT_TRUE(c.inference->decode.ops.empty());
  EXPECT_NEAR(c.inference->tpot_s.measured, 0.005, 1e-15);
}

TEST(CompareInference, TrainingMeasurementIsRefusedNamingTheKey) {
  try {
    compare_reports(simulated_inference(), measured());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("measured report: inference.ttft_s"), std::string::npos) << e.what();
  }
}

TEST(CompareInference, Json) {
  const json j = to_json(compare_reports(simulated_inference(), measured_inference()));
  EXPECT_EQ(j["kind"], "inference");
  EXPECT_FALSE(j.contains("step_s"));
  EXPECT_NEAR(j["ttft_s"]["rel_error"].get<double>(), -0.2, 1e-12);
  EXPECT_NEAR(j["tpot_s"]["abs_error"].get<double>(), -0.001, 1e-15);
  EXPECT_NEAR(j["memory"]["breakdown"]["kv_cache"]["measured"].get<double>(), 1000, 0);
  const json& first = j["prefill"]["ops"][0];
  EXPECT_EQ(first["name"], "attn.qkv.fwd");
  EXPECT_EQ(first["calls_per_pass"], 4);
  EXPECT_NEAR(first["per_pass_s"]["measured"].get<double>(), 0.006, 1e-15);
  for (const json& op : j["prefill"]["ops"])
    if (op["name"] == "head.gather.fwd") {
      EXPECT_TRUE(op["per_pass_s"]["rel_error"].is_null());
    }
  EXPECT_NEAR(j["decode"]["op_categories_s"]["attn fwd"]["predicted"].get<double>(), 0.0012, 1e-15);
  // training comparisons keep their keys, without "kind"
  EXPECT_FALSE(to_json(compare_reports(simulated(), measured())).contains("kind"));
}

TEST(CompareInference, Table) {
  const std::string t = format_comparison(compare_reports(simulated_inference(), measured_inference()));
  for (const char* s : {"TTFT, prefill (s)", "TPOT, decode pass (s)", "KV cache bytes per token", "  kv_cache",
                        "prefill: ops with the largest gap (s per pass)", "decode (mean pass): time per pass",
                        "head.gather.fwd (not measured)", "head.sample.fwd (not predicted)"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  EXPECT_NE(t.find("-20.0%"), std::string::npos);
  EXPECT_EQ(t.find("step (s)"), std::string::npos);
}

// The training table, byte for byte as `twinsim compare` printed it before inference
// comparisons existed.
TEST(ToText, TrainingTableUnchanged) {
  const std::string expected =
      "                                predicted     measured    pred-meas     error\n"
      "step (s)                         0.100000     0.125000    -0.025000    -20.0%\n"
      "\n"
      "memory per GPU (MiB)\n"
      "peak                                0.001        0.001       -0.000    -20.0%\n"
      "  params                            0.000        0.000       +0.000     +0.0%\n"
      "  grads                             0.000        0.000       +0.000     +0.0%\n"
      "  optimizer                         0.000        0.000       +0.000     +0.0%\n"
      "  activations                       0.000        0.000       -0.000    -55.6%\n"
      "  kv_cache                          0.000        0.000       +0.000     +0.0%\n"
      "  buffers                           0.000        0.000       +0.000     +0.0%\n"
      "\n"
      "time per step by op category (s), largest gap first\n"
      "  attn fwd                       0.019200     0.024000    -0.004800    -20.0%\n"
      "  mlp bwd                        0.008000     0.012000    -0.004000    -33.3%\n"
      "  optimizer                      0.000000     0.001000    -0.001000   -100.0%\n"
      "  mlp fwd                        0.008000     0.008000    +0.000000     +0.0%\n"
      "\n"
      "ops with the largest gap (s per step)\n"
      "  attn.qkv.fwd                   0.016000     0.024000    -0.008000    -33.3%\n"
      "  mlp.fc1.bwd_dgrad              0.008000     0.012000    -0.004000    -33.3%\n"
      "  attn.rope.fwd (not measured)     0.003200     0.000000    +0.003200       n/a\n"
      "  optimizer.step (not predicted)     0.000000     0.001000    -0.001000   -100.0%\n"
      "  mlp.fc1.fwd                    0.008000     0.008000    +0.000000     +0.0%\n";
  EXPECT_EQ(format_comparison(compare_reports(simulated(), measured())), expected);
}

// Two simulated reports, the NVMe tier against the CPU tier (a what-if): the drives' bytes
// get a row of their own, and the host row compares the optimizer's share on both sides.
TEST(CompareReports, NvmeBytesLineUpWhenEitherSideHasThem) {
  json nvme = simulated(), cpu = simulated();
  nvme["memory"]["host_bytes"] = 64;
  nvme["memory"]["host_breakdown"] = {{"optimizer", 64}};
  nvme["memory"]["nvme_bytes"] = 4096;
  nvme["memory"]["nvme_breakdown"] = {{"optimizer", 4096}};
  cpu["memory"]["host_bytes"] = 4096;
  cpu["memory"]["host_breakdown"] = {{"optimizer", 4096}};
  const Comparison c = compare_reports(nvme, cpu);
  ASSERT_TRUE(c.nvme_bytes.has_value());
  EXPECT_EQ(c.nvme_bytes->predicted, 4096);
  EXPECT_EQ(c.nvme_bytes->measured, 0);
  EXPECT_EQ(c.host_optimizer_bytes->predicted, 64);
  EXPECT_EQ(to_json(c)["memory"]["nvme_bytes"]["predicted"], 4096);
  EXPECT_NE(format_comparison(c).find("nvme: offloaded state"), std::string::npos);
  EXPECT_FALSE(compare_reports(cpu, cpu).nvme_bytes.has_value());  // neither side: no row
}

}  // namespace
}  // namespace twinsim::compare
