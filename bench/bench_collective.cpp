// Speed of the cost model: the simulator prices millions of ops and collectives per
// step of a large plan, so each call must stay well under a microsecond.
#include <benchmark/benchmark.h>

#include "sim/cost/collective_cost.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {
namespace {

ClusterSpec dgx_a100(int nodes) {
  ClusterSpec c;
  c.name = "dgx-a100-80gb";
  c.gpu.name = "a100-sxm-80gb";
  c.gpu.hbm_bandwidth_Bps = 2039e9;
  c.gpu.peak_flops = {{Dtype::bf16, 312e12}, {Dtype::fp32, 19.5e12}};
  c.gpu.kernel_launch_s = 4e-6;
  c.gpu.sms = 108;
  c.nodes = nodes;
  c.intra_node = {300e9, 3e-6, {}, {}, {}};
  c.inter_node = {25e9, 5e-6, {}, {}, {}};
  c.nics_per_node = 8;
  return c;
}

void BM_AllReduceCost(benchmark::State& state) {
  const ClusterSpec cluster = dgx_a100(16);
  const GroupLayout group = packed_group(cluster, 128);
  double bytes = 1 << 20;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time_s(cluster, CollectiveOp::all_reduce, group, bytes));
    bytes = bytes < 1e9 ? bytes * 1.5 : 1 << 20;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AllReduceCost);

void BM_GemmCost(benchmark::State& state) {
  const GpuSpec gpu = dgx_a100(1).gpu;
  std::int64_t m = 2048;
  for (auto _ : state) {
    benchmark::DoNotOptimize(op_time_s(gpu, gemm_op(Dtype::bf16, m, 4608, 12288)));
    m = m < 65536 ? m + 128 : 2048;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GemmCost);

}  // namespace
}  // namespace twinsim
