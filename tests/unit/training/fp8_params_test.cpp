// fp8-only weights (stack.fp8_params: Transformer Engine's fp8_model_init, Megatron-LM's
// --fp8-param-gather): no 16-bit copy of the layers' weight matrices on the GPU. Derived by
// hand from Llama-3-8B (32 layers of 218,103,808 matrix parameters; two 128256 x 4096
// embeddings and 65 norms of 4096 kept 16-bit).
#include <gtest/gtest.h>

#include <string>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {
namespace {

constexpr std::int64_t kMatrices = 32 * 218'103'808LL;
constexpr std::int64_t kOthers = 2 * 128'256LL * 4096 + 65 * 4096;

Scenario fp8_llama8b(const std::string& cluster, bool fp8_params) {
  return load_scenario_text("model: llama3-8b\ncluster: " + cluster +
                            "\ntraining: {seq_len: 2048, global_batch: 8, micro_batch: 1, precision: fp8}\n"
                            "plan: {tp: 1, pp: 1, dp: 1}\nstack: {preset: none, fp8_params: " +
                            (fp8_params ? "true" : "false") + "}\n");
}

std::int64_t params_bytes(const Scenario& s) {
  return training_weight_memory(s.model, s.plan, s.stack, s.cluster.gpu, *s.training, 0).params;
}

// B200 (fp8 GEMMs in any layout): bf16 model + TE's cached fp8 weight = 2 + 1 bytes a matrix
// parameter; fp8-only: 1. Hopper (TN-only fp8 GEMMs): 2 + 1 + 1 (the fp8 transpose), and
// fp8-only 1 + 1 (TE's Float8Tensor keeps its transpose for the dgrad).
TEST(Fp8Params, NoSixteenBitCopyOfTheWeightMatrices) {
  EXPECT_EQ(params_bytes(fp8_llama8b("dgx-b200", false)), 3 * kMatrices + 2 * kOthers);
  EXPECT_EQ(params_bytes(fp8_llama8b("dgx-b200", true)), 1 * kMatrices + 2 * kOthers);
  EXPECT_EQ(params_bytes(fp8_llama8b("dgx-h100", false)), 4 * kMatrices + 2 * kOthers);
  EXPECT_EQ(params_bytes(fp8_llama8b("dgx-h100", true)), 2 * kMatrices + 2 * kOthers);
  // the fp32 master weights and Adam's moments stay in the optimizer: 12 bytes a parameter
  const Scenario s = fp8_llama8b("dgx-b200", true);
  EXPECT_EQ(training_weight_memory(s.model, s.plan, s.stack, s.cluster.gpu, *s.training, 0).optimizer,
            12 * (kMatrices + kOthers));
}

TEST(Fp8Params, NeedsFp8Training) {
  try {
    load_scenario_text(R"(
model: llama3-8b
cluster: dgx-b200
training: {seq_len: 2048, global_batch: 8, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
stack: {preset: none, fp8_params: true}
)");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.fp8_params"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace twinsim
