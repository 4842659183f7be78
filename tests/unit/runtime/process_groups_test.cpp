// Rank layout of the process groups, checked against the range loops of Megatron-LM's
// older initialize_model_parallel (megatron/core/parallel_state.py, 2024, before the
// RankGenerator) and the worked example in its docstring.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "exec/runtime/process_groups.hpp"

namespace twinsim::exec {
namespace {

using Groups = std::vector<std::vector<int>>;

std::vector<int> range(int start, int end, int step = 1) {
  std::vector<int> r;
  for (int i = start; i < end; i += step) r.push_back(i);
  return r;
}

// Megatron's loops, transcribed: each returns every group of one kind.
Groups megatron_tp(const ParallelDims& d) {
  Groups g;
  const int world = d.world_size();
  for (int i = 0; i < world / d.tp; ++i) g.push_back(range(i * d.tp, (i + 1) * d.tp));
  return g;
}

Groups megatron_pp(const ParallelDims& d) {
  Groups g;
  const int world = d.world_size(), n = world / d.pp;
  for (int i = 0; i < n; ++i) g.push_back(range(i, world, n));
  return g;
}

Groups megatron_dp(const ParallelDims& d, bool with_cp) {
  Groups g;
  const int n = d.world_size() / d.pp;  // num_pipeline_model_parallel_groups
  for (int i = 0; i < d.pp; ++i) {
    const int start = i * n, end = (i + 1) * n;
    if (with_cp)
      for (int j = 0; j < d.tp; ++j) g.push_back(range(start + j, end, d.tp));
    else
      for (int j = 0; j < d.cp * d.tp; ++j) g.push_back(range(start + j, end, d.cp * d.tp));
  }
  return g;
}

Groups megatron_cp(const ParallelDims& d) {
  Groups g;
  const int n = d.world_size() / d.pp;
  for (int i = 0; i < d.pp; ++i)
    for (int j = 0; j < d.dp; ++j) {
      const int start = i * n + j * d.tp * d.cp, end = i * n + (j + 1) * d.tp * d.cp;
      for (int k = 0; k < d.tp; ++k) g.push_back(range(start + k, end, d.tp));
    }
  return g;
}

Groups megatron_embedding(const ParallelDims& d) {
  Groups g;
  for (const auto& ranks : megatron_pp(d))
    g.push_back(ranks.size() > 1 ? std::vector<int>{ranks.front(), ranks.back()} : ranks);
  return g;
}

// Megatron-core's expert RankGenerator (parallel_state.py: tp=expert_tp, ep, dp=expert-dp, pp,
// order "tp-ep-dp-pp"): rank = etp + ETP * (ep + EP * (edp + EDP * pp)), EDP = TP CP DP / (ETP EP)
Groups megatron_ep(const ParallelDims& d, bool expert_dp) {
  Groups g;
  const int etp_size = d.expert_tp(), edp_size = d.tp * d.cp * d.dp / (d.ep * etp_size);
  for (int pp = 0; pp < d.pp; ++pp)
    for (int etp = 0; etp < etp_size; ++etp) {
      const auto rank = [&](int ep, int edp) { return etp + etp_size * (ep + d.ep * (edp + edp_size * pp)); };
      if (expert_dp) {
        for (int ep = 0; ep < d.ep; ++ep) {
          std::vector<int> r;
          for (int edp = 0; edp < edp_size; ++edp) r.push_back(rank(ep, edp));
          g.push_back(r);
        }
      } else {
        for (int edp = 0; edp < edp_size; ++edp) {
          std::vector<int> r;
          for (int ep = 0; ep < d.ep; ++ep) r.push_back(rank(ep, edp));
          g.push_back(r);
        }
      }
    }
  return g;
}

// Every rank's group of `kind` is the one expected group that holds it, in the same order.
void expect_groups(const ParallelDims& d, GroupKind kind, const Groups& expected, const char* what) {
  std::set<int> covered;
  for (const auto& group : expected)
    for (int r : group) {
      EXPECT_EQ(group_ranks(d, r, kind), group) << what << " group of rank " << r;
      covered.insert(r);
    }
  if (kind != GroupKind::embedding) {
    EXPECT_EQ(static_cast<int>(covered.size()), d.world_size()) << what;
  }
}

void expect_all_groups(const ParallelDims& d) {
  expect_groups(d, GroupKind::tp, megatron_tp(d), "tp");
  expect_groups(d, GroupKind::pp, megatron_pp(d), "pp");
  expect_groups(d, GroupKind::dp, megatron_dp(d, false), "dp");
  expect_groups(d, GroupKind::dp_cp, megatron_dp(d, true), "dp_cp");
  expect_groups(d, GroupKind::cp, megatron_cp(d), "cp");
  expect_groups(d, GroupKind::embedding, megatron_embedding(d), "embedding");
  expect_groups(d, GroupKind::ep, megatron_ep(d, false), "ep");
  expect_groups(d, GroupKind::expert_dp, megatron_ep(d, true), "expert_dp");
}

TEST(ProcessGroups, MegatronDocstringExampleTp2Pp4On16Gpus) {
  // initialize_model_parallel docstring: 16 GPUs, tp 2, pp 4 -> dp 2
  const ParallelDims d{.tp = 2, .cp = 1, .ep = 1, .dp = 2, .pp = 4};
  EXPECT_EQ(group_ranks(d, 0, GroupKind::dp), (std::vector<int>{0, 2}));
  EXPECT_EQ(group_ranks(d, 13, GroupKind::dp), (std::vector<int>{13, 15}));
  EXPECT_EQ(group_ranks(d, 6, GroupKind::tp), (std::vector<int>{6, 7}));
  EXPECT_EQ(group_ranks(d, 0, GroupKind::pp), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(group_ranks(d, 7, GroupKind::pp), (std::vector<int>{3, 7, 11, 15}));
  EXPECT_EQ(group_ranks(d, 15, GroupKind::embedding), (std::vector<int>{3, 15}));
  EXPECT_EQ(group_ranks(d, 3, GroupKind::embedding), (std::vector<int>{3, 15}));
  EXPECT_TRUE(group_ranks(d, 11, GroupKind::embedding).empty());  // a middle stage
}

TEST(ProcessGroups, MatchMegatronLoopsForManyPlans) {
  const std::vector<ParallelDims> plans = {
      {.tp = 1, .cp = 1, .ep = 1, .dp = 1, .pp = 1}, {.tp = 2, .cp = 1, .ep = 1, .dp = 2, .pp = 2},
      {.tp = 4, .cp = 1, .ep = 1, .dp = 1, .pp = 2}, {.tp = 2, .cp = 2, .ep = 1, .dp = 2, .pp = 2},
      {.tp = 1, .cp = 2, .ep = 2, .dp = 3, .pp = 1}, {.tp = 2, .cp = 1, .ep = 4, .dp = 4, .pp = 3},
      {.tp = 3, .cp = 2, .ep = 4, .dp = 2, .pp = 2}, {.tp = 1, .cp = 1, .ep = 1, .dp = 1, .pp = 5},
  };
  for (const ParallelDims& d : plans) {
    SCOPED_TRACE(testing::Message() << "tp " << d.tp << " cp " << d.cp << " ep " << d.ep << " dp " << d.dp
                                    << " pp " << d.pp);
    expect_all_groups(d);
  }
}

// MoE parallel folding: the experts' ep x expert_tp groups tile a stage's tp x cp x dp ranks
// apart from attention's (Megatron-core's expert RankGenerator with expert_tp != tp).
TEST(ProcessGroups, FoldedExpertGroupsMatchMegatronLoops) {
  const std::vector<ParallelDims> plans = {
      {.tp = 2, .cp = 1, .ep = 2, .etp = 1, .dp = 1, .pp = 1}, {.tp = 2, .cp = 1, .ep = 4, .etp = 1, .dp = 2, .pp = 2},
      {.tp = 4, .cp = 1, .ep = 2, .etp = 2, .dp = 1, .pp = 1}, {.tp = 2, .cp = 2, .ep = 8, .etp = 1, .dp = 2, .pp = 1},
      {.tp = 2, .cp = 1, .ep = 1, .etp = 1, .dp = 2, .pp = 2}, {.tp = 1, .cp = 1, .ep = 2, .etp = 2, .dp = 4, .pp = 1},
  };
  for (const ParallelDims& d : plans) {
    SCOPED_TRACE(testing::Message() << "tp " << d.tp << " cp " << d.cp << " ep " << d.ep << " etp " << d.etp << " dp "
                                    << d.dp << " pp " << d.pp);
    expect_all_groups(d);
  }
}

// By hand: tp 2, dp 2, ep 2, expert_tp 1 on 4 ranks (rank = tp_rank + 2 dp_rank). The
// experts' ranks run 0..3 with ep fastest: EP groups {0, 1} and {2, 3} (the two TP ranks of a
// replica hold different experts), expert-DP groups {0, 2} and {1, 3}; attention's DP groups
// are {0, 2} and {1, 3} too, its TP groups {0, 1} and {2, 3}. With expert_tp 2 instead the
// experts follow attention: EP runs over the DP ranks, {0, 2} and {1, 3}.
TEST(ProcessGroups, FoldedExpertGroupsByHand) {
  const ParallelDims folded{.tp = 2, .cp = 1, .ep = 2, .etp = 1, .dp = 2, .pp = 1};
  EXPECT_EQ(group_ranks(folded, 1, GroupKind::ep), (std::vector<int>{0, 1}));
  EXPECT_EQ(group_ranks(folded, 2, GroupKind::ep), (std::vector<int>{2, 3}));
  EXPECT_EQ(group_ranks(folded, 3, GroupKind::expert_dp), (std::vector<int>{1, 3}));
  EXPECT_EQ(rank_coords(folded, 3).ep, 1);
  EXPECT_EQ(rank_coords(folded, 3).expert_dp, 1);
  EXPECT_EQ(rank_coords(folded, 3).etp, 0);
  const ParallelDims unfolded{.tp = 2, .cp = 1, .ep = 2, .etp = 2, .dp = 2, .pp = 1};
  EXPECT_EQ(group_ranks(unfolded, 1, GroupKind::ep), (std::vector<int>{1, 3}));
  EXPECT_EQ(group_ranks(unfolded, 2, GroupKind::expert_dp), (std::vector<int>{2}));
  EXPECT_EQ(rank_coords(unfolded, 3).etp, 1);
  // the default (etp 0) is the dense TP
  const ParallelDims same{.tp = 2, .cp = 1, .ep = 2, .dp = 2, .pp = 1};
  EXPECT_EQ(group_ranks(same, 1, GroupKind::ep), (std::vector<int>{1, 3}));
}

TEST(ProcessGroups, CoordinatesAreTheRankInEachGroup) {
  const ParallelDims d{.tp = 2, .cp = 2, .ep = 2, .dp = 2, .pp = 2};
  for (int r = 0; r < d.world_size(); ++r) {
    const RankCoords c = rank_coords(d, r);
    const auto pos = [&](GroupKind k) {
      const auto g = group_ranks(d, r, k);
      return static_cast<int>(std::find(g.begin(), g.end(), r) - g.begin());
    };
    EXPECT_EQ(c.tp, pos(GroupKind::tp));
    EXPECT_EQ(c.cp, pos(GroupKind::cp));
    EXPECT_EQ(c.dp, pos(GroupKind::dp));
    EXPECT_EQ(c.pp, pos(GroupKind::pp));
    EXPECT_EQ(c.ep, pos(GroupKind::ep));
    EXPECT_EQ(c.expert_dp, pos(GroupKind::expert_dp));
    EXPECT_EQ(global_rank(d, c.tp, c.cp, c.dp, c.pp), r);
  }
}

TEST(ProcessGroups, RejectsBadDegrees) {
  EXPECT_THROW(validate(ParallelDims{.tp = 0}), std::invalid_argument);
  try {
    validate(ParallelDims{.tp = 1, .cp = 1, .ep = 3, .dp = 4, .pp = 1});
    FAIL() << "ep 3 does not divide cp * dp = 4";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("plan.ep = 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rank_coords(ParallelDims{.tp = 2}, 2), std::out_of_range);
}

// Hybrid sharding (plan.dp_replicate 2) on tp 2 x dp 4 (8 ranks, rank = tp + 2 dp): the dp
// indices split replicate outer, shard inner (torchtitan's mesh [dp_replicate, dp_shard, tp]),
// so dp {0, 1} and {2, 3} are the shard groups and dp {0, 2}, {1, 3} one shard's replicas.
// By hand for TP rank 0: shard groups {0, 2} and {4, 6}, replicas {0, 4} and {2, 6}; TP rank 1
// the same plus one.
TEST(ProcessGroups, HybridShardingSplitsTheDataParallelRanksReplicateOuter) {
  const ParallelDims d{.tp = 2, .cp = 1, .ep = 1, .dp = 4, .pp = 1, .dp_replicate = 2};
  expect_groups(d, GroupKind::dp_shard, {{0, 2}, {4, 6}, {1, 3}, {5, 7}}, "dp_shard");
  expect_groups(d, GroupKind::dp_replicate, {{0, 4}, {2, 6}, {1, 5}, {3, 7}}, "dp_replicate");
  // without replicas the shard group is the whole data-parallel group and a replica one rank
  const ParallelDims flat{.tp = 2, .cp = 1, .ep = 1, .dp = 4, .pp = 1};
  expect_groups(flat, GroupKind::dp_shard, megatron_dp(flat, true), "dp_shard without replicas");
  EXPECT_EQ(group_ranks(flat, 5, GroupKind::dp_replicate), (std::vector<int>{5}));
  // replicas that do not divide dp are refused, naming the key
  const ParallelDims uneven{.tp = 1, .cp = 1, .ep = 1, .dp = 4, .pp = 1, .dp_replicate = 3};
  EXPECT_THROW(validate(uneven), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim::exec
