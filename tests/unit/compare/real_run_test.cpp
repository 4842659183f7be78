// Real runs of other stacks read for `twinsim compare SIM.json RUN`: the framework logs'
// figures (public excerpts, scenarios/validation/real_runs/logs/), a made-up trace whose
// exposed communication and idle time are known by hand, and the category table's matching.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compare/kernel_categories.hpp"
#include "compare/kineto_trace.hpp"
#include "compare/real_run.hpp"
#include "compare/training_log.hpp"

namespace twinsim::compare {
namespace {

std::string log_text(const std::string& file) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/real_runs/logs/" + file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TrainingLog, MegatronIterationTimeAndThroughputAfterTheFirstLine) {
  const LogRun r = read_training_log(log_text("megatron_mixtral_8x7b_16xh100_issue756.log"), "megatron");
  EXPECT_EQ(r.format, LogFormat::megatron);
  EXPECT_EQ(r.steps, 3);
  EXPECT_NEAR(*r.step_s, (5.5338 + 5.7186) / 2, 1e-9);  // iterations 44 and 45
  EXPECT_NEAR(*r.tflops_per_gpu, (236.0 + 228.4) / 2, 1e-9);
  EXPECT_FALSE(r.peak_bytes);
}

TEST(TrainingLog, MegatronMemoryReportAndNemoStepTiming) {
  const LogRun r = read_training_log(
      "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.5 | max allocated: 2048.0 | reserved: 3000.0 | max reserved: 3000.0\n"
      "Epoch 0: : 10/100 [00:10<01:30, train_step_timing in s=1.25, reduced_train_loss=9.1]\n"
      "Epoch 0: : 11/100 [00:11<01:29, train_step_timing in s=1.5, reduced_train_loss=9.0]\n",
      "nemo");
  EXPECT_NEAR(*r.step_s, 1.5, 1e-12);
  EXPECT_NEAR(*r.peak_bytes, 2048.0 * 1048576, 1);
}

TEST(TrainingLog, TorchtitanTokensPerSecondMfuAndMemory) {
  const LogRun r = read_training_log(log_text("torchtitan_pr3393.log"), "torchtitan");
  EXPECT_EQ(r.format, LogFormat::torchtitan);
  EXPECT_EQ(r.steps, 4);
  EXPECT_NEAR(*r.tokens_per_s_per_gpu, 7313, 1e-9);  // median of 7,334 7,313 7,282
  EXPECT_NEAR(*r.mfu, 0.0017, 1e-12);
  EXPECT_NEAR(*r.peak_bytes, 9.46 * 1073741824.0, 1);
}

TEST(TrainingLog, DeepSpeedSamplesPerSecondAndPeakAllocated) {
  const LogRun r = read_training_log(log_text("deepspeed_issue2629.log"), "deepspeed");
  EXPECT_EQ(r.format, LogFormat::deepspeed);
  EXPECT_EQ(r.steps, 5);
  // CurrSamplesPerSec of steps 18-21: 145.09, 157.81, 155.10, 155.01, the median the middle two's mean
  EXPECT_NEAR(*r.samples_per_s, (155.10475468488542 + 155.01088859630886) / 2, 1e-9);
  EXPECT_NEAR(*r.peak_bytes, 2.62 * 1073741824.0, 1);
}

TEST(TrainingLog, TextOfNoKnownFormatIsRefusedNamingTheFile) {
  try {
    read_training_log("hello\nworld\n", "notes.txt");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos);
  }
}

TEST(KernelCategories, FirstMatchingRowWinsAndUnmatchedKernelsAreUnknown) {
  const CategoryTable& t = category_table();
  EXPECT_EQ(t.of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            "communication.all_reduce");
  EXPECT_EQ(t.of_kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"), "communication.send_recv");
  EXPECT_EQ(t.of_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"), "gemm");
  EXPECT_EQ(t.of_kernel("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>"), "attention");
  EXPECT_EQ(t.of_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"),
            "norm_elementwise");
  EXPECT_EQ(t.of_kernel("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>"), "optimizer");
  EXPECT_EQ(t.of_kernel("my_custom_kernel"), kUnknownCategory);
  EXPECT_EQ(t.of_op("attn.qkv.bwd_wgrad"), "gemm");
  EXPECT_EQ(t.of_op("attn.q_norm.fwd"), "norm_elementwise");  // exact, not attn.q's prefix
  EXPECT_EQ(t.of_op("dp.grad_reduce"), "communication");
  EXPECT_EQ(t.of_op("optimizer.step"), "optimizer");
}

// Two steps of 10 ms: a 4 ms GEMM, then a 3 ms all-reduce of which 1 ms overlaps it, and one
// unknown kernel of 1 ms alone; per step 1 ms... of exposed communication is 2 ms over 2 steps.
nlohmann::json made_up_trace() {
  auto kernel = [](const char* name, double ts, double dur) {
    return nlohmann::json{{"ph", "X"}, {"cat", "kernel"}, {"name", name}, {"ts", ts}, {"dur", dur}, {"args", {{"device", 0}}}};
  };
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#1"}, {"ts", 0}, {"dur", 10000}});
  events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", "ProfilerStep#2"}, {"ts", 10000}, {"dur", 10000}});
  events.push_back(kernel("ampere_bf16_s16816gemm_bf16_128x256", 0, 4000));
  events.push_back(kernel("ncclKernel_AllReduce_RING_LL_Sum_bfloat16", 3000, 3000));
  events.push_back(kernel("mystery_kernel", 12000, 1000));
  return {{"traceEvents", events}};
}

TEST(KinetoTrace, PerStepCategoriesExposedCommunicationAndIdle) {
  const TraceRun r = read_kineto_trace(made_up_trace(), "made-up");
  EXPECT_EQ(r.steps, 2);
  EXPECT_NEAR(r.step_s, 0.010, 1e-12);
  EXPECT_NEAR(r.category_s.at("gemm"), 0.002, 1e-12);
  EXPECT_NEAR(r.category_s.at("communication.all_reduce"), 0.0015, 1e-12);
  EXPECT_NEAR(r.exposed_comm_s, 0.001, 1e-12);           // 2 ms not under the GEMM, over 2 steps
  EXPECT_NEAR(r.idle_s, (0.020 - 0.007) / 2, 1e-12);     // busy: 0-6 ms and 12-13 ms
  ASSERT_EQ(r.unknown.size(), 1u);
  EXPECT_EQ(r.unknown[0].name, "mystery_kernel");
  EXPECT_THROW(read_kineto_trace({{"traceEvents", nlohmann::json::array()}}, "empty"), std::invalid_argument);
}

TEST(RealRun, TraceCategoriesBesideTheSimulatorsOps) {
  const nlohmann::json simulated = {
      {"time",
       {{"step_s", 0.012},
        {"step_s_interval", {0.011, 0.014}},
        {"breakdown", {{"dp_comm_exposed_s", 0.0005}, {"pp_bubble_s", 0.0}}},
        {"ops",
         {{{"name", "mlp.down.fwd"}, {"time_s", 0.001}, {"count", 2}},
          {{"name", "dp.grad_reduce"}, {"time_s", 0.002}, {"count", 1}},
          {{"name", "new.op.fwd"}, {"time_s", 0.001}, {"count", 1}}}}}},
      {"throughput", {{"tokens_per_s_per_gpu", 1000.0}}}};
  const RealRunComparison c = compare_with_trace(simulated, read_kineto_trace(made_up_trace(), "made-up"));
  ASSERT_TRUE(c.step_s);
  EXPECT_NEAR(c.step_s->measured, 0.010, 1e-12);
  std::map<std::string, Pair> by_name;
  for (const NamedPair& n : c.categories) by_name[n.name] = n.value;
  EXPECT_NEAR(by_name["gemm"].predicted, 0.002, 1e-12);
  EXPECT_NEAR(by_name["gemm"].measured, 0.002, 1e-12);
  EXPECT_NEAR(by_name["communication"].predicted, 0.002, 1e-12);
  EXPECT_NEAR(by_name["unknown"].measured, 0.0005, 1e-12);
  ASSERT_EQ(c.unknown_ops.size(), 1u);  // listed, not dropped
  EXPECT_EQ(c.unknown_ops[0], "new.op.fwd");
  const nlohmann::json j = to_json(c);
  EXPECT_FALSE(j["measured_in_interval"].get<bool>());  // 10 ms below 11-14 ms
  EXPECT_NE(format_real_run(c).find("mystery_kernel"), std::string::npos);
}

}  // namespace
}  // namespace twinsim::compare
