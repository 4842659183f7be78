// The report's kernel launches and HBM bytes per step (time.kernels, time.ops[].hbm_bytes),
// what a fusion what-if compares: GEMM bytes by hand, the sums, and flash attention's saving.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenario/load.hpp"
#include "sim/report/report.hpp"

namespace twinsim {
namespace {

nlohmann::json gpt2_small(const std::vector<std::string>& sets = {}) {
  const Scenario s = load_scenario_text(R"(
model: gpt2-small
cluster: dgx-h100
training: {seq_len: 1024, global_batch: 8, micro_batch: 1, precision: bf16}
plan: {tp: 1, pp: 1, dp: 8}
)", sets);
  return simulate_report(s, "", Fidelity::fast)["time"];
}

double op_bytes(const nlohmann::json& time, const std::string& name) {
  for (const auto& op : time["ops"])
    if (op["name"] == name) return op["hbm_bytes"].get<double>();
  ADD_FAILURE() << "no op " << name;
  return 0;
}

TEST(KernelsReport, GemmBytesAreItsThreeMatricesInBf16) {
  const nlohmann::json t = gpt2_small();
  // attn.qkv: A [1024, 768] x B [768, 2304] -> C [1024, 2304], 2 bytes each
  EXPECT_EQ(op_bytes(t, "attn.qkv.fwd"), 2.0 * (1024 * 768 + 768 * 2304 + 1024 * 2304));
  // attn.proj: [1024, 768] x [768, 768] -> [1024, 768]; each backward GEMM moves as much
  EXPECT_EQ(op_bytes(t, "attn.proj.fwd"), 2.0 * (1024 * 768 + 768 * 768 + 1024 * 768));
  EXPECT_EQ(op_bytes(t, "attn.proj.bwd_wgrad"), op_bytes(t, "attn.proj.fwd"));
}

TEST(KernelsReport, TheTotalsAreTheOpsSums) {
  const nlohmann::json t = gpt2_small();
  double bytes = 0, group_bytes = 0;
  std::int64_t launches = 0, group_launches = 0;
  for (const auto& op : t["ops"]) {
    const std::string name = op["name"];
    if (name.find("dp.") == 0 || name.find("tp_") != std::string::npos) continue;  // collectives launch no compute kernel
    bytes += op["count"].get<double>() * op["hbm_bytes"].get<double>();
    launches += op["count"].get<std::int64_t>();
  }
  for (const auto& [group, g] : t["kernels"]["by_group"].items()) {
    group_bytes += g["hbm_bytes"].get<double>();
    group_launches += g["launches"].get<std::int64_t>();
  }
  EXPECT_NEAR(t["kernels"]["hbm_bytes"].get<double>(), bytes, 1e-9 * bytes);
  EXPECT_EQ(t["kernels"]["launches"].get<std::int64_t>(), launches);
  EXPECT_NEAR(group_bytes, bytes, 1e-9 * bytes);
  EXPECT_EQ(group_launches, launches);
  EXPECT_TRUE(t["kernels"]["by_group"].contains("attn") && t["kernels"]["by_group"].contains("mlp"));
}

// Unfused attention writes and reads the s x s scores: the attention group's bytes grow,
// the MLP's stay, and the launches stay (one op each way in this model).
TEST(KernelsReport, FlashAttentionSavesTheScoresTraffic) {
  const nlohmann::json flash = gpt2_small(), unfused = gpt2_small({"plan.flash_attention=false"});
  const auto& f = flash["kernels"]["by_group"];
  const auto& u = unfused["kernels"]["by_group"];
  // 12 heads x 1024^2 scores in bf16, 12 layers, one micro-batch: at least written once
  EXPECT_GT(u["attn"]["hbm_bytes"].get<double>() - f["attn"]["hbm_bytes"].get<double>(), 12.0 * 1024 * 1024 * 2 * 12);
  EXPECT_EQ(u["mlp"]["hbm_bytes"], f["mlp"]["hbm_bytes"]);
}

// A MoE model's dense and MoE layers are priced by their own costs: tiny-moe's dense first
// layer runs mlp.*, its three MoE layers moe.*, all four the attention (2 micro-batches).
TEST(KernelsReport, MoeModelOpsCountTheirOwnLayers) {
  const Scenario s = load_scenario_text(R"(
model: tiny-moe
cluster: dgx-h100
training: {seq_len: 64, global_batch: 4, micro_batch: 2, precision: bf16}
plan: {tp: 1, pp: 1, dp: 1}
)");
  const nlohmann::json t = simulate_report(s, "", Fidelity::fast)["time"];
  const auto count = [&t](const std::string& name) {
    for (const auto& op : t["ops"])
      if (op["name"] == name) return op["count"].get<int>();
    return 0;
  };
  EXPECT_EQ(count("attn.qkv.fwd"), 4 * 2);
  EXPECT_EQ(count("mlp.norm.fwd"), 4 * 2);
  EXPECT_EQ(count("mlp.gate_up.fwd"), 1 * 2);
  EXPECT_EQ(count("moe.router.fwd"), 3 * 2);
  EXPECT_EQ(count("moe.experts.gate_up.bwd_wgrad"), 3 * 2);
  EXPECT_EQ(count("moe.shared.down.fwd"), 3 * 2);
}

}  // namespace
}  // namespace twinsim
