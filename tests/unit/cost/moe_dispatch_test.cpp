// Group-limited routing's network share of the MoE all-to-all, by hand.
#include <gtest/gtest.h>

#include "sim/cost/moe_dispatch.hpp"

namespace twinsim {
namespace {

MoeSpec deepseek_v3_routing() {
  MoeSpec m;
  m.experts = 256, m.top_k = 8, m.groups = 8, m.top_groups = 4;  // HF config: n_group 8, topk_group 4
  return m;
}

TEST(MoeDispatch, NodeLimitedRoutingHalvesDeepSeekV3sNetworkBytes) {
  // EP 64 over 8 nodes of 8: a token reaches at most 4 nodes, 4 x 7/8 = 3.5 remote, against
  // 8 copies x 56/64 = 7 remote in the plain all-to-all: half the bytes
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(1000.0, deepseek_v3_routing(), GroupLayout{64, 8}), 500.0);
  // EP 4 over 4 nodes (one GPU each): 2 groups per node, 4 groups reach 4 nodes, 3 remote,
  // against 8 x 3/4 = 6
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(1000.0, deepseek_v3_routing(), GroupLayout{4, 1}), 500.0);
  // EP 256 over 32 nodes: a group spans 4 nodes, 4 groups up to 16 nodes, 16 x 31/32 = 15.5
  // remote, more than the 8 x 248/256 = 7.75 copies: no saving
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(1000.0, deepseek_v3_routing(), GroupLayout{256, 8}), 1000.0);
}

TEST(MoeDispatch, UnlimitedRoutingOrOneNodeKeepsTheBytes) {
  MoeSpec plain = deepseek_v3_routing();
  plain.groups = plain.top_groups = 0;
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(1000.0, plain, GroupLayout{64, 8}), 1000.0);
  EXPECT_DOUBLE_EQ(moe_dispatch_bytes(1000.0, deepseek_v3_routing(), GroupLayout{8, 8}), 1000.0);
}

}  // namespace
}  // namespace twinsim
