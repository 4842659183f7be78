// PyTorch's foreach AdamW (stack.optimizer_foreach: torch.optim.AdamW(foreach=True), what
// torchtitan ran before 2025): eight _foreach passes over fp32 weights and moments, counted by
// hand in models/optimizer_state.hpp, against the fused kernel's one.
#include <gtest/gtest.h>

#include <vector>

#include "models/optimizer_state.hpp"
#include "scenario/load.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {
namespace {

Scenario llama8b_fsdp(bool foreach_adamw) {
  return load_scenario_text(std::string("model: llama3-8b\n"
                                        "cluster: {preset: dgx-h100, nodes: 1}\n"
                                        "stack: {grad_reduce_fp32: true, optimizer_foreach: ") +
                            (foreach_adamw ? "true" : "false") +
                            "}\n"
                            "training: {seq_len: 4096, global_batch: 8, micro_batch: 1, precision: bf16}\n"
                            "plan: {tp: 1, pp: 1, dp: 8, zero: 3}\n");
}

// With fp32 gradients (FSDP2's fp32 reduce): weight decay 8, the first moment's lerp 8 + 4, the
// second's mul 8 and addcmul 8 + 4, the denominator's sqrt, div and add 8 each, the weights'
// addcdiv 16: 80 bytes a parameter, where the fused kernel reads and writes the weights and
// moments once and reads the gradient, 28. A billion-parameter shard: 80 GB against 28 GB.
TEST(ForeachAdamw, EightPassesOverTheShardAgainstTheFusedKernelsOne) {
  EXPECT_DOUBLE_EQ(foreach_adamw_update_bytes_per_param(4), 80.0);
  EXPECT_DOUBLE_EQ(optimizer_update_bytes_per_param(Optimizer::adam, 4), 28.0);
  const double shard = 1e9;
  const Scenario foreach_s = llama8b_fsdp(true), fused_s = llama8b_fsdp(false);
  const std::vector<ComputeOp> foreach_ops =
      optimizer_shard_ops(foreach_s.stack, foreach_s.plan, *foreach_s.training, shard);
  const std::vector<ComputeOp> fused_ops = optimizer_shard_ops(fused_s.stack, fused_s.plan, *fused_s.training, shard);
  ASSERT_FALSE(foreach_ops.empty());
  ASSERT_FALSE(fused_ops.empty());
  EXPECT_DOUBLE_EQ(foreach_ops[0].bytes, 80e9);
  EXPECT_DOUBLE_EQ(fused_ops[0].bytes, 28e9);
  // the step's optimizer time grows with them (the search's estimate prices the same ops)
  EXPECT_GT(optimizer_shard_s(foreach_s.cluster, foreach_s.stack, foreach_s.plan, *foreach_s.training, shard),
            optimizer_shard_s(fused_s.cluster, fused_s.stack, fused_s.plan, *fused_s.training, shard) + 0.015);
}

}  // namespace
}  // namespace twinsim
