// Where a prediction leaves the measured data: GEMM and attention FLOPs outside a curve's
// ends, and the ops of a report priced there (SCENARIO.md, time.extrapolated_ops).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hardware/stack_spec.hpp"
#include "scenario/load.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/training/training_report.hpp"

namespace twinsim {
namespace {

TEST(BeyondMeasured, OutsideTheEndsOfACurveOfTwoPointsOrMore) {
  const std::vector<EfficiencyPoint> curve{{1e9, 0.5}, {1e12, 0.8}};
  EXPECT_TRUE(beyond_measured(curve, 1e8));
  EXPECT_FALSE(beyond_measured(curve, 1e9));
  EXPECT_FALSE(beyond_measured(curve, 3e10));
  EXPECT_FALSE(beyond_measured(curve, 1e12));
  EXPECT_TRUE(beyond_measured(curve, 1.01e12));
  // one published figure has no measured range to leave
  EXPECT_FALSE(beyond_measured({{1, 0.7}}, 1e15));
  EXPECT_FALSE(beyond_measured({}, 1e15));
}

TEST(BeyondMeasured, GemmCostSaysWhenItsShapeLiesBeyondTheH100Table) {
  // OpenXLA's H100 table ends at 4 x 4096^3 = 5.5e11 FLOPs (h100-sxm.yaml)
  const GpuSpec h100 = catalog_gpu("h100-sxm");
  EXPECT_FALSE(gemm_cost(h100, gemm_op(Dtype::bf16, 4096, 4096, 4096)).extrapolated);  // 1.4e11
  EXPECT_TRUE(gemm_cost(h100, gemm_op(Dtype::bf16, 8192, 14336, 4096)).extrapolated);  // 9.6e11
  EXPECT_TRUE(gemm_cost(h100, gemm_op(Dtype::bf16, 64, 64, 64)).extrapolated);  // 5.2e5 < 3.4e7
  // its fp8 curve (cuBLASLt squares to 32k^3 = 7.0e13) covers the larger shape
  EXPECT_FALSE(gemm_cost(h100, gemm_op(Dtype::fp8, 8192, 14336, 4096)).extrapolated);
  // attention on the H100 is one published figure: never marked
  ComputeOp attention;
  attention.kind = ComputeKind::attention;
  attention.flops = 1e14;
  EXPECT_FALSE(op_cost(h100, attention).extrapolated);
}

TEST(BeyondMeasured, AttentionWithoutFiguresIsMarked) {
  // the B200 carries no FlashAttention-2 figures: attention under flash2 is priced by its
  // GEMM curve, an assumption the report lists; its flash4 curves are its own figures
  const GpuSpec b200 = catalog_gpu("b200");
  ComputeOp attention;
  attention.kind = ComputeKind::attention;
  attention.flops = 1e11;  // inside the B200's GEMM table (3.4e7 to 5.5e11)
  attention.head_dim = 128;
  attention.kv_len = 8192;
  EXPECT_TRUE(op_cost(b200, attention).extrapolated);
  attention.attention_kernel = kFlash4Attention;
  EXPECT_FALSE(op_cost(b200, attention).extrapolated);  // inside its 512-256k points
}

bool lists(const nlohmann::json& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(BeyondMeasured, TheReportListsTheOpsPricedBeyondTheData) {
  // Llama 3 8B at 8k tokens per micro-batch: its MLP GEMMs (gate_up 8192 x 28672 x 4096 =
  // 1.9e12 FLOPs, down 9.6e11) pass the H100 table's end (5.5e11); its output projection
  // (8192 x 4096 x 4096 = 2.7e11) does not
  const std::string text =
      "model: llama3-8b\ncluster: dgx-h100\n"
      "training: {seq_len: 8192, global_batch: 8, micro_batch: 1}\nplan: {tp: 1, pp: 1, dp: 8, zero: 1}\n";
  const nlohmann::json time = time_json(predict_training(load_scenario_text(text)));
  const nlohmann::json& beyond = time["extrapolated_ops"];
  EXPECT_TRUE(lists(beyond, "mlp.gate_up.fwd"));
  EXPECT_TRUE(lists(beyond, "mlp.down.bwd_wgrad"));
  EXPECT_FALSE(lists(beyond, "attn.proj.fwd"));
  for (const auto& op : time["ops"]) EXPECT_EQ(op["extrapolated"].get<bool>(), lists(beyond, op["name"]));
  // at 2k tokens the layer's GEMMs lie inside the table (gate_up: 4.8e11)
  const nlohmann::json short_seq = time_json(predict_training(load_scenario_text(text, {"training.seq_len=2048"})));
  EXPECT_FALSE(lists(short_seq["extrapolated_ops"], "mlp.gate_up.fwd"));
}

}  // namespace
}  // namespace twinsim
