// Context parallelism's attention (models/layer_ops.cpp core_attention): ring attention runs
// one kernel call a ring step, each over one rank's chunk of the sequence, so a flash
// kernel's rate is the one for s/cp keys, not s. Checked against the same GPU's attention
// on a sequence of s/cp without context parallelism, worked out by hand below.
#include <gtest/gtest.h>

#include <string>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/training/layer_costs.hpp"

namespace twinsim {
namespace {

// Llama-3-8B on one DGX H100 under Transformer Engine's attention (cuDNN's measured curves),
// with no fixed time per kernel, so an attention call's time is its FLOPs at its curve's rate.
Scenario llama8b(std::int64_t seq, int cp) {
  const std::string text = "model: llama3-8b\n"
                           "cluster: {preset: dgx-h100, nodes: 1, gpu: {preset: h100-sxm, kernel_launch_us: 0}}\n"
                           "stack: {attention_kernel: cudnn}\n"
                           "training: {seq_len: " + std::to_string(seq) + ", global_batch: 8, micro_batch: 1, precision: bf16}\n"
                           "plan: {tp: 1, pp: 1, cp: " + std::to_string(cp) + ", dp: " + std::to_string(8 / cp) + "}\n";
  return load_scenario_text(text);
}

OpTime attention(const Scenario& s) {
  for (const OpTime& op : cost_layer(s, 0).ops)
    if (op.name == op_names::kAttnCore) return op;
  ADD_FAILURE() << "no attention row";
  return {};
}

// 8,192 tokens over cp = 2: each rank's 4,096 queries attend to all 8,192 keys, twice the
// FLOPs of a 4,096-token sequence without context parallelism (2 x 4096 x 8192 x (q + o)
// against 2 x 4096 x 4096 x (q + o)), in calls of 4,096 keys, the same rate: twice its time,
// forward and backward. At the whole sequence's rate (cuDNN's curve at 8,192 keys is 9% faster
// forward and 13% backward than at 4,096) it would come out below twice.
TEST(ContextParallelAttention, RunsAtTheRateOfOneRanksChunk) {
  const OpTime ring = attention(llama8b(8192, 2)), chunk = attention(llama8b(4096, 1));
  const OpTime whole = attention(llama8b(8192, 1));
  ASSERT_GT(chunk.fwd_s, 0);
  EXPECT_NEAR(ring.fwd_s / chunk.fwd_s, 2.0, 1e-9);
  EXPECT_NEAR(ring.dgrad_s / chunk.dgrad_s, 2.0, 1e-9);
  // cp = 2 does half the whole sequence's work per rank, more slowly than half its time
  EXPECT_GT(ring.fwd_s, 0.5 * whole.fwd_s * 1.05);
  EXPECT_GT(ring.dgrad_s, 0.5 * whole.dgrad_s * 1.05);
}

}  // namespace
}  // namespace twinsim
