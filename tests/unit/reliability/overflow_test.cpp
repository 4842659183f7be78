// Byte and FLOP counts of 10-trillion-parameter models on 100,000 GPUs stay exact, and
// sizes beyond 64 bits fail loudly instead of wrapping around.
#include <gtest/gtest.h>

#include "models/checked_math.hpp"
#include "models/param_count.hpp"
#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

// 250 layers of width 57,344: 12 l h^2 ~ 9.9e12 parameters, on 8 x 125 x 100 = 100,000 GPUs
const char* kTenTrillion = R"(
model: {layers: 250, hidden: 57344, heads: 448, vocab: 256000, position: rope, norm: rmsnorm,
        activation: gelu, tied_embeddings: false, bias: false}
cluster: dgx-h100
training: {seq_len: 4096, global_batch: 10000, micro_batch: 1}
plan: {tp: 8, pp: 125, dp: 100, sequence_parallel: true, zero: 1, recompute: full}
)";

TEST(Overflow, TenTrillionParametersCountExactly) {
  const Scenario s = load_scenario_text(kTenTrillion);
  EXPECT_EQ(s.plan.world_size(), 100000);
  // independent count in 128-bit arithmetic: per layer 4h^2 (attention) + 8h^2 (FFN) + 2h
  // (norms), embedding and output layer Vh each, final norm h
  const __int128 l = 250, h = 57344, V = 256000;
  const __int128 expected = l * (12 * h * h + 2 * h) + 2 * V * h + h;
  EXPECT_EQ(static_cast<__int128>(count_params(s.model).total), expected);
  EXPECT_GT(count_params(s.model).total, 9'000'000'000'000LL);
}

TEST(Overflow, TenTrillionModelPredictsMemoryAndTime) {
  const Scenario s = load_scenario_text(kTenTrillion);
  const MemoryReport mem = predict_memory(s);
  EXPECT_GT(mem.peak_bytes, 0);
  EXPECT_EQ(mem.stages.size(), 125u);
  const TrainingPrediction p = predict_training(s);
  EXPECT_GT(p.step_s, 0.0);
  // model FLOPs ~ 6 N T (Kaplan et al. 2020): within 25% with attention and logits added
  const double six_nt = 6.0 * static_cast<double>(count_params(s.model).total) * 10000 * 4096;
  EXPECT_NEAR(p.model_flops / six_nt, 1.0, 0.25);
  EXPECT_GT(p.throughput.mfu, 0.0);
  EXPECT_LT(p.throughput.mfu, 1.0);
}

TEST(Overflow, CountsBeyond64BitsThrow) {
  EXPECT_THROW(checked_mul(std::int64_t{1} << 40, std::int64_t{1} << 30), OverflowError);
  EXPECT_THROW(checked_add(INT64_MAX, 1), OverflowError);
  // h = 2^31 - 1 and a million layers: 12 l h^2 ~ 5.5e25 parameters. The loader refuses
  // such a model up front, naming the keys and values (issue 58: the OverflowError came
  // seconds into the work, naming two numbers)
  const std::string huge = R"(
model: {layers: 1000000, hidden: 2147483647, heads: 1, vocab: 32000}
cluster: dgx-h100
training: {seq_len: 16, global_batch: 8}
plan: {dp: 8}
)";
  try {
    load_scenario_text(huge);
    ADD_FAILURE() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers=1000000 x model.heads=1 x model.head_dim=2147483647 x "
                                         "model.hidden=2147483647: make 4.61e+24 attention parameters"),
              std::string::npos)
        << e.what();
  }
  // the counts themselves still throw rather than wrap, for a model built in code
  Scenario s = load_scenario_text(R"(
model: {layers: 1, hidden: 64, heads: 1, vocab: 32000}
cluster: dgx-h100
training: {seq_len: 16, global_batch: 8}
plan: {dp: 8}
)");
  s.model.layers = 1000000;
  s.model.hidden = s.model.head_dim = s.model.ffn_hidden = 2147483647;
  EXPECT_THROW(count_params(s.model), OverflowError);
  EXPECT_THROW(predict_memory(s), OverflowError);
}

}  // namespace
}  // namespace twinsim
