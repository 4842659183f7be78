#include "sim/cost/collective_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/cost/test_hardware.hpp"

namespace twinsim {
namespace {

constexpr double kGiB = 1073741824.0;

double busbw_GBps(const ClusterSpec& cluster, CollectiveOp c, const GroupLayout& g, double bytes) {
  return bytes / collective_time_s(cluster, c, g, bytes) * bus_bandwidth_factor(c, g.ranks) / 1e9;
}

TEST(BusBandwidth, NcclTestsFactors) {
  // nccl-tests doc/PERFORMANCE.md, Summary: 2(n-1)/n, (n-1)/n, (n-1)/n, (n-1)/n, 1, 1.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_to_all, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::broadcast, 8), 1.0);
  // A published 8-rank all_reduce_perf line: 16777216 B in 121.33 us prints algbw 138.28
  // and busbw 242.00 (kvcache-ai/Mooncake pull request #3484).
  const double algbw = 16777216 / 121.33e-6 / 1e9;
  EXPECT_NEAR(algbw, 138.28, 0.01);
  EXPECT_NEAR(138.28 * bus_bandwidth_factor(CollectiveOp::all_reduce, 8), 242.00, 0.01);
}

TEST(AllReduce, EightA100sOnNvlinkReachPublishedBusBandwidth) {
  // nccl-tests on one 8x A100 SXM node, all_reduce_perf -b 8 -e 4G: 232.54 GB/s busbw
  // (NVIDIA/nccl-tests issue #175). The model's NVLink efficiency comes from H100 (0.80),
  // so this is a check, not a fit.
  const ClusterSpec dgx = test::dgx_a100(1);
  EXPECT_NEAR(busbw_GBps(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), 4 * kGiB), 232.54, 0.05 * 232.54);
}

TEST(AllReduce, DgxA100NodesOverHdrReachPublishedBusBandwidth) {
  // "On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards and we measure 192GB/s
  // AllReduce BusBW" (NVIDIA engineer, NVIDIA/nccl issue #812). The ring's node-to-node
  // edges share the node's 8 NICs; the NIC efficiency (24 of 25 GB/s) is from issue #412.
  const ClusterSpec cluster = test::dgx_a100(4);
  EXPECT_NEAR(busbw_GBps(cluster, CollectiveOp::all_reduce, packed_group(cluster, 32), 8 * kGiB), 192, 0.05 * 192);
}

TEST(AllReduce, SmallMessagesAreLatencyDominated) {
  // Two A100s, 32 B: 10.14 us measured (NVIDIA/nccl issue #583, all_reduce_perf -g 2).
  const ClusterSpec dgx = test::dgx_a100(1);
  const CollectiveCost pair = collective_cost(dgx, CollectiveOp::all_reduce, packed_group(dgx, 2), 32);
  EXPECT_NEAR(pair.time_s(), 10.14e-6, 0.3 * 10.14e-6);
  const CollectiveCost eight = collective_cost(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), 8);
  EXPECT_GT(eight.latency_s, 0.99 * eight.time_s());
  EXPECT_EQ(eight.protocol, Protocol::ll);  // the low-latency protocol wins tiny messages
  EXPECT_LT(busbw_GBps(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), 8), 0.01);
  EXPECT_EQ(collective_cost(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), 8 * kGiB).protocol,
            Protocol::simple);
}

TEST(Collectives, OwnEfficiencyCurveAppliesToThatCollectiveOnly) {
  // an MPI-like link where reduce-scatter reaches a tenth of what the others do
  ClusterSpec cluster = test::dgx_a100(1);
  const GroupLayout g = packed_group(cluster, 8);
  const double bytes = 1 * kGiB;  // bandwidth-bound: time scales with 1 / efficiency
  const double rs = collective_time_s(cluster, CollectiveOp::reduce_scatter, g, bytes);
  const double ag = collective_time_s(cluster, CollectiveOp::all_gather, g, bytes);
  cluster.intra_node.efficiency_by_op["reduce_scatter"] = {{1.0, 0.08}};  // 0.8 (the NVLink default) / 10
  EXPECT_NEAR(collective_time_s(cluster, CollectiveOp::reduce_scatter, g, bytes) / rs, 10.0, 0.2);
  EXPECT_DOUBLE_EQ(collective_time_s(cluster, CollectiveOp::all_gather, g, bytes), ag);
}

TEST(Collectives, TimeNeverDecreasesWithSize) {
  for (int nodes : {1, 4}) {
    const ClusterSpec cluster = test::dgx_a100(nodes);
    for (CollectiveOp c : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                         CollectiveOp::all_to_all, CollectiveOp::broadcast, CollectiveOp::send_recv}) {
      const GroupLayout g = c == CollectiveOp::send_recv ? GroupLayout{2, nodes == 1 ? 2 : 1}
                                                     : packed_group(cluster, 8 * nodes);
      double previous = 0;
      for (double bytes = 8; bytes <= 8 * kGiB; bytes *= 2) {
        const double t = collective_time_s(cluster, c, g, bytes);
        EXPECT_GE(t, previous) << to_string(c) << " at " << bytes << " B on " << nodes << " nodes";
        previous = t;
      }
    }
  }
}

TEST(Collectives, CrossingNodesIsSlowerThanNvlink) {
  const ClusterSpec one_node = test::dgx_a100(1);
  const ClusterSpec eight_nodes = test::dgx_a100(8);
  for (double bytes : {1e3, 1e6, 1e9}) {
    // 8 ranks on one NVSwitch vs one rank on each of 8 nodes (e.g. a DP group under TP 8)
    EXPECT_GT(collective_time_s(eight_nodes, CollectiveOp::all_reduce, GroupLayout{8, 1}, bytes),
              collective_time_s(one_node, CollectiveOp::all_reduce, GroupLayout{8, 8}, bytes));
    // 16 ranks on 2 DGX nodes vs 16 GPUs on one (hypothetical) 16-GPU NVLink node
    ClusterSpec big_node = one_node;
    big_node.gpus_per_node = 16;
    EXPECT_GT(collective_time_s(test::dgx_a100(2), CollectiveOp::all_gather, GroupLayout{16, 8}, bytes),
              collective_time_s(big_node, CollectiveOp::all_gather, GroupLayout{16, 16}, bytes));
    EXPECT_GT(collective_time_s(eight_nodes, CollectiveOp::send_recv, GroupLayout{2, 1}, bytes),
              collective_time_s(one_node, CollectiveOp::send_recv, GroupLayout{2, 2}, bytes));
  }
}

TEST(AllReduce, TreeForSmallMessagesAcrossManyNodesRingForLarge) {
  // 16 DGX nodes: the ring's 2(n-1) = 254 steps against the tree's 2(7 + log2 16) = 22
  // make the tree faster when latency dominates; the ring moves fewer bytes per rank
  // (2(n-1)/n x S against 2S / 0.9), so it wins on large messages (NCCL tuning.cc).
  const ClusterSpec cluster = test::dgx_a100(16);
  const GroupLayout all = packed_group(cluster, 128);
  EXPECT_EQ(collective_cost(cluster, CollectiveOp::all_reduce, all, 64 * 1024).algorithm, Algorithm::tree);
  EXPECT_EQ(collective_cost(cluster, CollectiveOp::all_reduce, all, 1 * kGiB).algorithm, Algorithm::ring);
  // Inside one node the tree is a chain: no fewer steps, so the ring wins at every size.
  const ClusterSpec dgx = test::dgx_a100(1);
  for (double bytes : {8.0, 1e6, 1e9})
    EXPECT_EQ(collective_cost(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), bytes).algorithm,
              Algorithm::ring);
}

// Two nodes: each is the other's only peer in both halves of NCCL's double binary tree, so
// a node sends and receives the buffer once, not twice (NCCL tuning.cc rates the two-node
// tree at the intra-node bandwidth). DGX A100 nodes, 8 x 25 GB/s x 0.96 = 192 GB/s of NICs:
// the tree's network side takes 1 GiB / (0.9 x 192 GB/s) on two nodes, twice that on four,
// against the chain inside the node, 2 x 1 GiB / (0.9 x 0.8 x 300 GB/s), which sets the pace
// on two nodes. On two nodes the tree then beats the ring's 2(n-1)/n x 1 GiB / 192 GB/s.
TEST(AllReduce, TwoNodeTreeExchangesTheBufferOnce) {
  const double bytes = 1 * kGiB;
  const CollectiveCost two = collective_cost(test::dgx_a100(2), CollectiveOp::all_reduce, GroupLayout{16, 8}, bytes);
  EXPECT_EQ(two.algorithm, Algorithm::tree);
  EXPECT_NEAR(two.bandwidth_s, std::max(bytes / (0.9 * 192e9), 2 * bytes / (0.9 * 0.8 * 300e9)), 1e-9);
  const ClusterSpec four_nodes = test::dgx_a100(4);
  const CollectiveCost four_tree_or_ring = collective_cost(four_nodes, CollectiveOp::all_reduce, GroupLayout{32, 8}, bytes);
  EXPECT_EQ(four_tree_or_ring.algorithm, Algorithm::ring);  // 2 x 1 GiB / (0.9 x 192) > 1.94 x 1 GiB / 192
  EXPECT_NEAR(four_tree_or_ring.bandwidth_s, 2.0 * 31 / 32 * bytes / 192e9, 1e-9);
}

// Inside the node a multi-node tree runs at the node's measured all-reduce where it has one
// (NVLS on NVSwitch nodes reduces faster than a chain over NVLink).
TEST(AllReduce, TreeTakesTheNodesMeasuredAllReduceInside) {
  ClusterSpec fast_network = test::dgx_a100(2);
  fast_network.inter_node.bandwidth_Bps = 1e12;  // the node's inside sets the pace
  const double bytes = 1 * kGiB;
  // the chain, 2 x 1 GiB / (0.9 x 0.8 x 300 GB/s), loses to the ring over NVLink
  const CollectiveCost chain = collective_cost(fast_network, CollectiveOp::all_reduce, GroupLayout{16, 8}, bytes);
  EXPECT_EQ(chain.algorithm, Algorithm::ring);
  EXPECT_NEAR(chain.bandwidth_s, 2.0 * 15 / 16 * bytes / (0.8 * 300e9), 1e-9);
  fast_network.intra_node.measured_busbw["all_reduce"][8] = {{1e6, 100e9}, {1e9, 280e9}};
  const CollectiveCost nvls = collective_cost(fast_network, CollectiveOp::all_reduce, GroupLayout{16, 8}, bytes);
  EXPECT_EQ(nvls.algorithm, Algorithm::tree);
  EXPECT_NEAR(nvls.bandwidth_s, 1.75 * bytes / 280e9, 1e-9);  // its largest size's busbw
}

// A group size measured only from 1 MiB falls below it as the nearest group measured smaller
// does (down to that group's smallest size, whose ratio then holds): 4 GPUs measured at 1 MiB
// only (40 GB/s busbw: 1.5 x 1 MiB / 40 GB/s), 8 GPUs from 32 KiB, their time 4x lower there
// than at 1 MiB (1.75 x 32 KiB / 1.75 GB/s = 32.8 us against 1.75 x 1 MiB / 14 GB/s = 131 us).
TEST(Collectives, BelowItsMeasuredSizesAGroupFollowsOneMeasuredSmaller) {
  ClusterSpec dgx = test::dgx_a100(1);
  dgx.intra_node.measured_busbw["all_reduce"][4] = {{1048576, 40e9}};
  dgx.intra_node.measured_busbw["all_reduce"][8] = {{32768, 1.75e9}, {1048576, 14e9}};
  const double four_at_1mib = 1.5 * 1048576 / 40e9;
  const double ratio = (1.75 * 32768 / 1.75e9) / (1.75 * 1048576 / 14e9);
  EXPECT_NEAR(collective_time_s(dgx, CollectiveOp::all_reduce, {4, 4}, 1048576), four_at_1mib, 1e-12);
  EXPECT_NEAR(collective_time_s(dgx, CollectiveOp::all_reduce, {4, 4}, 32768), four_at_1mib * ratio, 1e-12);
  EXPECT_NEAR(collective_time_s(dgx, CollectiveOp::all_reduce, {4, 4}, 8192), four_at_1mib * ratio, 1e-12);  // held
  // without a group measured smaller the smallest size's time holds
  dgx.intra_node.measured_busbw["all_reduce"].erase(8);
  EXPECT_NEAR(collective_time_s(dgx, CollectiveOp::all_reduce, {4, 4}, 32768), four_at_1mib, 1e-12);
}

TEST(Collectives, LinkEfficiencyCurveFromTheCatalogIsUsed) {
  ClusterSpec dgx = test::dgx_a100(1);
  dgx.intra_node.efficiency = {{1.0, 0.5}};
  // half the line rate: 150 GB/s busbw at large sizes
  EXPECT_NEAR(busbw_GBps(dgx, CollectiveOp::all_reduce, packed_group(dgx, 8), 8 * kGiB), 150, 1.0);
}

TEST(Collectives, GroupOfOneIsFreeAndBadGroupsThrow) {
  const ClusterSpec dgx = test::dgx_a100(1);
  EXPECT_EQ(collective_time_s(dgx, CollectiveOp::all_reduce, GroupLayout{1, 1}, 1e9), 0);
  EXPECT_THROW(collective_time_s(dgx, CollectiveOp::all_reduce, GroupLayout{16, 16}, 1e9), std::invalid_argument);
  ClusterSpec no_network = dgx;
  no_network.inter_node.bandwidth_Bps = 0;
  EXPECT_THROW(collective_time_s(no_network, CollectiveOp::all_reduce, GroupLayout{16, 8}, 1e9), std::invalid_argument);
}

TEST(Collectives, ParsesNcclTestsNames) {
  CollectiveOp c;
  ASSERT_TRUE(parse_collective("allreduce", c));
  EXPECT_EQ(c, CollectiveOp::all_reduce);
  ASSERT_TRUE(parse_collective("reduce_scatter", c));
  EXPECT_EQ(c, CollectiveOp::reduce_scatter);
  ASSERT_TRUE(parse_collective("sendrecv", c));
  EXPECT_EQ(c, CollectiveOp::send_recv);
  EXPECT_FALSE(parse_collective("allreduc", c));
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// A measured busbw curve, worked by hand: all-reduce over 2 ranks has bus factor 2 (2-1)/2 = 1,
// so time = bytes / busbw. Points: 1e6 B at 10 GB/s, 1e8 B at 100 GB/s; 4 ranks (factor 1.5):
// 1e6 B at 20 GB/s, 1e8 B at 200 GB/s.
ClusterSpec measured_node() {
  ClusterSpec c = test::dgx_a100(1);
  c.intra_node.measured_busbw["all_reduce"] = {{2, {{1e6, 10e9}, {1e8, 100e9}}},
                                                {4, {{1e6, 20e9}, {1e8, 200e9}}}};
  return c;
}

TEST(MeasuredCollective, TimeIsBytesTimesBusFactorOverTheMeasuredBusbw) {
  const ClusterSpec c = measured_node();
  // at a measured point: 1e6 / 10e9 = 100 us
  CollectiveCost at = collective_cost(c, CollectiveOp::all_reduce, {2, 2}, 1e6);
  EXPECT_TRUE(at.measured);
  EXPECT_FALSE(at.extrapolated);
  EXPECT_NEAR(at.time_s(), 100e-6, 1e-12);
  // halfway in log(bytes), 1e7: busbw halfway, 55 GB/s: 1e7 / 55e9 = 181.8 us
  EXPECT_NEAR(collective_time_s(c, CollectiveOp::all_reduce, {2, 2}, 1e7), 1e7 / 55e9, 1e-12);
  // below the smallest size the call's time holds (100 us), flagged
  at = collective_cost(c, CollectiveOp::all_reduce, {2, 2}, 1e3);
  EXPECT_TRUE(at.extrapolated);
  EXPECT_NEAR(at.time_s(), 100e-6, 1e-12);
  // above the largest, its busbw holds: 1e9 / 100e9 = 10 ms, flagged
  at = collective_cost(c, CollectiveOp::all_reduce, {2, 2}, 1e9);
  EXPECT_TRUE(at.extrapolated);
  EXPECT_NEAR(at.time_s(), 10e-3, 1e-12);
}

TEST(MeasuredCollective, GroupSizesBetweenMeasuredOnesInterpolateTheTime) {
  const ClusterSpec c = measured_node();
  // 4 ranks at 1e6: 1.5 x 1e6 / 20e9 = 75 us. 3 ranks (factor 4/3): 4/3 x 1e6 over 10 and
  // over 20 GB/s, 133.3 and 66.7 us, halfway between 2 and 4 ranks: 100 us
  EXPECT_NEAR(collective_time_s(c, CollectiveOp::all_reduce, {4, 4}, 1e6), 75e-6, 1e-12);
  const CollectiveCost three = collective_cost(c, CollectiveOp::all_reduce, {3, 3}, 1e6);
  EXPECT_FALSE(three.extrapolated);
  EXPECT_NEAR(three.time_s(), 100e-6, 1e-12);
  // 8 ranks lie beyond the table: the 4-rank curve, with 8's bus factor 1.75: 87.5 us, flagged
  const CollectiveCost eight = collective_cost(c, CollectiveOp::all_reduce, {8, 8}, 1e6);
  EXPECT_TRUE(eight.extrapolated);
  EXPECT_NEAR(eight.time_s(), 1.75 * 1e6 / 20e9, 1e-12);
  // a collective the table lacks, and a group across nodes, use the protocol model
  EXPECT_FALSE(collective_cost(c, CollectiveOp::all_gather, {4, 4}, 1e6).measured);
}

}  // namespace
}  // namespace twinsim
