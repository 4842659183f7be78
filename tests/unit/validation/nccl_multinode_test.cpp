// The collective model across nodes against nccl-tests all-reduce between AWS instances
// over EFA (scenarios/validation/microbench/): two p4de (16 A100s, 4 x 100 Gb/s EFA per
// node) and two p5 (16 H100s, 32 x 100 Gb/s) from aws-samples/awsome-distributed-training,
// four p6-b200 (32 B200s, 8 x 400 Gb/s) from S. Bekman's ml-engineering. The catalog's
// aws-p4de, aws-p5 and aws-p6-b200 take their NVLink side from the DGX they share GPUs and
// NVSwitch with, their network's line rate from the instance, their per-step latency from
// the smallest sizes, and (p4de, p5) the fraction of the line rate a message gets from every
// other size from 1 MiB (`twinsim fit-network`); the sizes between are held out, and the
// p6-b200 keeps the default efficiency: all of its sizes are out of sample.
//
// Held out (median |error|, worst): two p4de 6.1%, 12.9%; two p5 2.3%, 7.4%; four p6-b200
// (every size from 1 MiB) 6.9%, 30.2% slow at 16 MiB. Before NCCL's two-node tree was
// modelled (the tree always exchanged the buffer twice between nodes, so the ring won at
// large sizes) the two-node runs' 2 GiB all-reduce was predicted 64% (p4de) and 27% (p5)
// slow; with the tree but InfiniBand's flat network efficiency (0.96), up to 43% fast
// between 1 and 64 MiB, where EFA stays further below its line rate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/validate/network_fit.hpp"

namespace twinsim {
namespace {

std::string microbench(const std::string& file) {
  return std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file;
}

// aws-samples' tables: the out-of-place time of one run's rows
std::vector<MeasuredAllReduce> awsome_run(const std::string& run) {
  return read_allreduce_csv(microbench("nccl_allreduce_2node_efa_a100_p4de_h100_p5_awsome_distributed_training.csv"),
                            16, "run=" + run, 0);
}

// ml-engineering's B200 table prints busbw only (time = 2(n-1)/n x bytes / busbw over the
// nodes' 8 GPUs each), every row twice
std::vector<MeasuredAllReduce> b200_run(int nodes) {
  return read_allreduce_csv(microbench("nccl_allreduce_b200_1node_4node_efa_mlengineering.csv"), 8 * nodes,
                            "nodes=" + std::to_string(nodes), 0);
}

struct Judged {
  double median_abs = 0, worst_abs = 0;
  int sizes = 0;
};

// `held_out_only`: the sizes between the fitted ones (every other size from 1 MiB, the
// 2nd, 4th, ...: `twinsim fit-network --fit even`).
Judged judge(const std::string& node, int ranks, const std::vector<MeasuredAllReduce>& rows, bool held_out_only) {
  ClusterSpec cluster = catalog_node(node);
  cluster.nodes = ranks / cluster.gpus_per_node;
  const GroupLayout group = packed_group(cluster, ranks);
  std::vector<double> errors;
  Judged j;
  int index = -1;
  for (const MeasuredAllReduce& m : rows) {
    if (m.bytes < 1048576) continue;
    if (++index % 2 == 0 && held_out_only) continue;
    const CollectiveCost c = collective_cost(cluster, CollectiveOp::all_reduce, group, m.bytes);
    const double error = c.time_s() / m.time_s - 1;
    std::printf("%-12s %2d ranks %12.0f B: predicted %9.1f us (%s), measured %9.1f us: %+6.1f%%\n", node.c_str(), ranks,
                m.bytes, c.time_s() * 1e6, std::string(to_string(c.algorithm)).c_str(), m.time_s * 1e6, 100 * error);
    errors.push_back(std::abs(error));
  }
  std::sort(errors.begin(), errors.end());
  j.sizes = static_cast<int>(errors.size());
  const std::size_t n = errors.size();
  if (n > 0) j.median_abs = 0.5 * (errors[(n - 1) / 2] + errors[n / 2]), j.worst_abs = errors.back();
  return j;
}

TEST(NcclMultiNode, TwoP4deOverEfa) {
  const Judged j = judge("aws-p4de", 16, awsome_run("p4de_slurm"), true);
  EXPECT_EQ(j.sizes, 6);
  EXPECT_LT(j.median_abs, 0.08);
  EXPECT_LT(j.worst_abs, 0.15);
}

TEST(NcclMultiNode, TwoP5OverEfa) {
  const Judged j = judge("aws-p5", 16, awsome_run("p5_slurm"), true);
  EXPECT_EQ(j.sizes, 7);
  EXPECT_LT(j.median_abs, 0.05);
  EXPECT_LT(j.worst_abs, 0.10);
  // The same instances on EKS (NCCL 2.18.5, 64 MiB to 2 GiB) ran up to 1.6x slower than the
  // Slurm run at mid sizes: the spread between two setups, printed, not judged.
  judge("aws-p5", 16, awsome_run("p5_eks"), false);
}

TEST(NcclMultiNode, FourP6B200OverEfa) {
  const Judged j = judge("aws-p6-b200", 32, b200_run(4), false);
  EXPECT_EQ(j.sizes, 15);
  EXPECT_LT(j.median_abs, 0.08);
  EXPECT_LT(j.worst_abs, 0.35);
}

// Two nodes' measured bus bandwidth lies above anything a ring can reach (the ring's node
// crossings carry 2(n-1)/n of the buffer over the node's NICs: busbw at most their rate),
// so NCCL ran a tree; the model picks it too. Four nodes: the ring.
TEST(NcclMultiNode, TwoNodesRunTheTreeFourTheRing) {
  for (const char* node : {"aws-p4de", "aws-p5"}) {
    ClusterSpec two = catalog_node(node);
    two.nodes = 2;
    EXPECT_EQ(collective_cost(two, CollectiveOp::all_reduce, packed_group(two, 16), 2147483648.0).algorithm,
              Algorithm::tree)
        << node;
  }
  ClusterSpec four = catalog_node("aws-p6-b200");
  four.nodes = 4;
  EXPECT_EQ(collective_cost(four, CollectiveOp::all_reduce, packed_group(four, 32), 2147483648.0).algorithm,
            Algorithm::ring);
}

}  // namespace
}  // namespace twinsim
