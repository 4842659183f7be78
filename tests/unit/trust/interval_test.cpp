// The trust interval's arithmetic on made-up cases: the regime it picks, the source weights,
// the widening where the regime does not cover the scenario, and the rate's inversion.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/trust/interval.hpp"

namespace twinsim::trust {
namespace {

Regime regime(const std::string& gpu, const std::string& stack, const std::string& scale = "2-8") {
  Regime r;
  r[Dim::workload] = "training";
  r[Dim::gpu] = gpu;
  r[Dim::stack] = stack;
  r[Dim::model] = "dense";
  r[Dim::parallelism] = "tp+dp";
  r[Dim::scale] = scale;
  return r;
}

CaseError error_case(const std::string& source, const Regime& r, double log_ratio, long long gpus = 8) {
  CaseError c;
  c.name = source;
  c.source = source;
  c.regime = r;
  c.gpus = gpus;
  c.log_ratio = log_ratio;
  return c;
}

// errors +-0.1 around 0 from one source: mean 0, sd 0.1069 (n 8), t(0.9, 7) 1.415
std::vector<CaseError> a100_cases() {
  std::vector<CaseError> out;
  for (int i = 0; i < 8; ++i) out.push_back(error_case("one", regime("a100", "megatron-eager"), i % 2 ? 0.1 : -0.1));
  return out;
}

TEST(TrustInterval, ItsRegimesPredictionIntervalInLogSpace) {
  const TrustInterval t = trust_interval(a100_cases(), {regime("a100", "megatron-eager"), 8, false}, 2.0);
  const double sd = std::sqrt(8 * 0.01 / 7), half = 1.415 * sd * std::sqrt(1 + 1.0 / 8);
  EXPECT_NEAR(t.low, 2.0 * std::exp(-half), 1e-9);
  EXPECT_NEAR(t.high, 2.0 * std::exp(half), 1e-9);
  EXPECT_EQ(t.cases, 8);
  EXPECT_EQ(t.level, "workload+gpu+stack+model+parallelism+scale");
  EXPECT_TRUE(t.validated);
  EXPECT_TRUE(t.reasons.empty());
}

TEST(TrustInterval, ARegimeThatRunsFastMovesTheIntervalUp) {
  std::vector<CaseError> cases = a100_cases();
  for (CaseError& c : cases) c.log_ratio -= 0.2;  // predicted 18% short of the measured time
  const TrustInterval t = trust_interval(cases, {regime("a100", "megatron-eager"), 8, false}, 1.0);
  EXPECT_GT(t.low, 1.0);
  EXPECT_NEAR(std::sqrt(t.low * t.high), std::exp(0.2), 1e-9);
}

TEST(TrustInterval, AnUnvalidatedGpuBorrowsABroaderRegimeWidenedAndSaysWhy) {
  std::vector<CaseError> cases = a100_cases();
  for (int i = 0; i < 6; ++i) cases.push_back(error_case("two", regime("h100", "hf-eager"), 0.3 + 0.01 * i, 1));
  const TrustInterval known = trust_interval(cases, {regime("a100", "megatron-eager"), 8, false}, 1.0);
  const TrustInterval unknown = trust_interval(cases, {regime("b200", "megatron-eager"), 8, false}, 1.0);
  EXPECT_FALSE(unknown.validated);
  EXPECT_GT(unknown.half_width, known.half_width);
  ASSERT_FALSE(unknown.reasons.empty());
  EXPECT_NE(unknown.reasons[0].find("gpu b200"), std::string::npos) << unknown.reasons[0];
}

TEST(TrustInterval, ScaleBeyondTheValidatedRunsWidens) {
  const TrustInterval within = trust_interval(a100_cases(), {regime("a100", "megatron-eager"), 8, false}, 1.0);
  std::vector<CaseError> cases = a100_cases();
  cases.push_back(error_case("three", regime("a100", "megatron-eager", "9-512"), 0.25, 64));
  const TrustInterval beyond = trust_interval(cases, {regime("a100", "megatron-eager"), 8, false}, 1.0);
  EXPECT_TRUE(beyond.reasons.empty());
  const TrustInterval larger = trust_interval(cases, {regime("a100", "megatron-eager"), 4096, false}, 1.0);
  ASSERT_EQ(larger.reasons.size(), 1u);
  EXPECT_NE(larger.reasons[0].find("scale beyond"), std::string::npos);
  EXPECT_GT(larger.half_width, within.half_width);
}

TEST(TrustInterval, EachSourceWeighsOneInAPooledRegime) {
  // 8 cases of one source at 0, one case of another at 0.9: the pooled mean sits halfway
  std::vector<CaseError> cases;
  for (int i = 0; i < 8; ++i) cases.push_back(error_case("many", regime("a100", "x"), 0.0));
  cases.push_back(error_case("single", regime("a100", "y"), 0.9));
  const TrustInterval t = trust_interval(cases, {regime("a100", "z"), 8, false}, 1.0);
  EXPECT_EQ(t.level, "workload+gpu+model");
  EXPECT_NEAR(t.bias, 0.45, 1e-9);
  EXPECT_NEAR(t.effective_cases, 1.0 * 4 / (8.0 / 64 + 1), 1e-9);
}

TEST(TrustInterval, TheErrorTableRoundTripsThroughItsCsv) {
  std::vector<CaseError> cases = a100_cases();
  cases[0].extrapolated = true;
  cases[0].predicted = 1.5;
  cases[0].measured = 1.25;
  const std::vector<CaseError> back = parse_case_errors(to_csv(cases), "test");
  ASSERT_EQ(back.size(), cases.size());
  EXPECT_TRUE(back[0].extrapolated);
  EXPECT_DOUBLE_EQ(back[0].measured, 1.25);
  EXPECT_EQ(back[3].regime.values, cases[3].regime.values);
  EXPECT_THROW(parse_case_errors("name,x\n", "bad"), std::runtime_error);
}

}  // namespace
}  // namespace twinsim::trust
