// Which of two measurements of small one-node collectives on H100/H200/B200 the catalog
// should follow, settled by third sources (issue #54/#56):
// - the catalog: OpenXLA's collective perf table (one isolated execution of an executable
//   per timing: xla/tools/collective_perf_table_gen.cc, GetMedianRuntimeNs of
//   ExecutionProfile::compute_time_ns) and, for the 8-GPU all-reduce, Azure's nccl-tests
//   (NCCL 2.18.5 / 2.20.5, one process per GPU, graph 0);
// - aiconfigurator's nccl-tests (NCCL 2.23-2.29.2, one process, -t 8 threads, 100 calls back to
//   back, no -G: collector/network/collect_nccl.py, so no CUDA graphs, whatever was assumed);
// - the third sources, held out of both (the catalog's smallest measured size is 64 KiB):
//   published nccl-tests logs (nccl_small_messages_published_logs.csv: NVIDIA/nccl #2094,
//   #1259, #1940, nccl-tests #333), Azure's rows below 64 KiB, S. Bekman's torch.distributed
//   32 KiB row on 8x H200.
// Every prediction is collective_time_s on the catalog node, the event engine's function.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/cost/collective_cost.hpp"

namespace twinsim {
namespace {

std::string small_msg_file(const std::string& name) {
  return std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + name;
}

using SmallKey = std::tuple<std::string, std::string, int, double>;  // gpu, op, gpus, bytes

// aiconfigurator's nccl-tests time (s) by gpu, op, gpus and bytes
const std::map<SmallKey, double>& aiconfigurator_times() {
  static const std::map<SmallKey, double> times = [] {
    std::map<SmallKey, double> t;
    std::ifstream in(small_msg_file("nccl_intranode_aiconfigurator.csv"));
    EXPECT_TRUE(in);
    std::string line;
    std::getline(in, line);  // source,gpu,nccl_version,op,gpus,dtype,bytes,time_us
    while (std::getline(in, line)) {
      const auto c = split_csv_line(line);
      if (c.size() >= 8) t[{c[1], c[3], std::stoi(c[4]), std::stod(c[6])}] = std::stod(c[7]) * 1e-6;
    }
    return t;
  }();
  return times;
}

const ClusterSpec& small_msg_node(const std::string& gpu) {
  static std::map<std::string, ClusterSpec> nodes;
  static const std::map<std::string, std::string> node_of{
      {"h100", "dgx-h100"}, {"h200", "dgx-h200"}, {"b200", "dgx-b200"}};
  if (!nodes.contains(gpu)) nodes.emplace(gpu, catalog_node(node_of.at(gpu)));
  return nodes.at(gpu);
}

double catalog_s(const std::string& gpu, const std::string& op_name, int gpus, double bytes) {
  CollectiveOp op{};
  EXPECT_TRUE(parse_collective(op_name, op)) << op_name;
  return collective_time_s(small_msg_node(gpu), op, {gpus, gpus}, bytes);
}

struct EagerRow {
  std::string gpu, source;
  double bytes = 0, time_s = 0;
};

// The eager 8-GPU all-reduce rows below 64 KiB: the published logs without a CUDA graph or
// tuning (#2094), Azure's nccl-tests, Bekman's torch.distributed (time = bus factor x bytes / busbw).
std::vector<EagerRow> eager_8gpu_allreduce() {
  std::vector<EagerRow> rows;
  std::string line;
  std::ifstream logs(small_msg_file("nccl_small_messages_published_logs.csv"));
  std::getline(logs, line);  // source,gpu,gpus,nccl_version,launch,cuda_graph,algo,op,dtype,bytes,time_us,approx
  for (; std::getline(logs, line);) {
    const auto c = split_csv_line(line);
    if (c.size() >= 12 && c[2] == "8" && c[6] == "default" && c[11] == "0")
      rows.push_back({c[1], c[0], std::stod(c[9]), std::stod(c[10]) * 1e-6});
  }
  const double factor = bus_bandwidth_factor(CollectiveOp::all_reduce, 8);
  std::ifstream azure(small_msg_file("nccl_allreduce_8gpu_a100_h100_h200_azure.csv"));
  std::getline(azure, line);  // gpu,gpus,nccl_version,collective,placement,label,size_bytes_inferred,busbw_gbps
  for (; std::getline(azure, line);) {
    const auto c = split_csv_line(line);
    const std::string gpu = c[0].starts_with("H100") ? "h100" : c[0].starts_with("H200") ? "h200" : "";
    const double bytes = std::stod(c[6]);
    if (!gpu.empty() && bytes < 65536)
      rows.push_back({gpu, "azure nccl-tests", bytes, factor * bytes / (std::stod(c[7]) * 1e9)});
  }
  std::ifstream bekman(small_msg_file("nccl_allreduce_h200_8gpu_nvlink_mlengineering.csv"));
  std::getline(bekman, line);  // gpu,gpus_per_node,nodes,fabric,collective,tool,algo,label,size_bytes,busbw,algbw
  for (; std::getline(bekman, line);) {
    const auto c = split_csv_line(line);
    const double bytes = std::stod(c[8]);
    if (bytes < 65536)
      rows.push_back({"h200", "bekman torch.distributed", bytes, factor * bytes / (std::stod(c[9]) * 1e9)});
  }
  return rows;
}

double small_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Eager small all-reduces on 8 H100 / H200 (19 held-out rows): |ln(catalog / measured)| has
// a smaller median than |ln(aiconfigurator / measured)|, and aiconfigurator is at least 1.4x
// faster than every eager row (it is the fast outlier among eager measurements, not the
// catalog the slow one). Measured: H100 catalog 42.2 us flat below 64 KiB against
// 25.6-34.6 us (Azure, #2094); aiconfigurator 15.6-19.0 us. H200 catalog 30.8 us against
// 29.9-31.2 (Azure) and 45.6 (Bekman, 32 KiB); aiconfigurator 16.0-18.4 us.
TEST(NcclSmallMessages, EagerCallsSideWithTheCatalog) {
  const auto rows = eager_8gpu_allreduce();
  ASSERT_EQ(rows.size(), 19u);  // #2094: 6; Azure: 6 H100 + 6 H200; Bekman: 1
  std::vector<double> catalog_err, aic_err;
  for (const EagerRow& r : rows) {
    const double cat = catalog_s(r.gpu, "all_reduce", 8, r.bytes);
    const auto aic = aiconfigurator_times().find({r.gpu, "all_reduce", 8, r.bytes});
    ASSERT_NE(aic, aiconfigurator_times().end()) << r.gpu << " " << r.bytes;
    std::printf("  %s 8-GPU all_reduce %6.0f B  %-42s measured %5.1f us  catalog %5.1f  aiconfigurator %5.1f\n",
                r.gpu.c_str(), r.bytes, r.source.c_str(), r.time_s * 1e6, cat * 1e6, aic->second * 1e6);
    catalog_err.push_back(std::fabs(std::log(cat / r.time_s)));
    aic_err.push_back(std::fabs(std::log(aic->second / r.time_s)));
    EXPECT_LT(aic->second * 1.4, r.time_s) << r.gpu << " " << r.bytes << " " << r.source;
  }
  std::printf("  median |ln ratio|: catalog %.3f, aiconfigurator %.3f\n", small_median(catalog_err),
              small_median(aic_err));
  EXPECT_LT(small_median(catalog_err), small_median(aic_err));
}

// A graph-captured call is the device's time alone: NVIDIA/nccl #1259's 2-GPU H100
// all-reduce with -G 10 (NVLSTree, NCCL 2.20.5) takes about 6 us from 128 B to 64 KiB.
// aiconfigurator's back-to-back calls (100 enqueued, launch hidden behind the queue) land
// on it (7.3 us at 64 KiB: within 35%), the catalog's isolated executions (15.2 us) at more
// than twice it: the catalog's excess is a per-call cost, not the kernel's.
TEST(NcclSmallMessages, GraphCapturedCallIsTheBackToBackTime) {
  const double graph_s = 6e-6, bytes = 65536;  // #1259, approximate ("approximately 6us")
  const double aic = aiconfigurator_times().at({"h100", "all_reduce", 2, bytes});
  const double cat = catalog_s("h100", "all_reduce", 2, bytes);
  std::printf("  h100 2-GPU all_reduce 64 KiB: graph %.1f us, aiconfigurator %.1f, catalog %.1f\n", graph_s * 1e6,
              aic * 1e6, cat * 1e6);
  EXPECT_LT(std::fabs(std::log(aic / graph_s)), std::log(1.35));
  EXPECT_GT(cat, 2 * graph_s);
}

struct Excess {
  double small_s = 0, middle_s = 0, small_ratio = 0, middle_ratio = 0;
};

// The catalog's time minus aiconfigurator's, median over 1-32 KiB (small) and 256 KiB-4 MiB
// (middle), and the median ratio catalog / aiconfigurator over each.
Excess excess_of(const std::string& gpu, const std::string& op, int gpus) {
  std::vector<double> small, middle, small_ratio, middle_ratio;
  for (const auto& [key, aic_s] : aiconfigurator_times()) {
    const auto& [g, o, n, bytes] = key;
    if (g != gpu || o != op || n != gpus || (bytes >= 65536 && bytes < 262144) || bytes > 4194304) continue;
    const double cat = catalog_s(gpu, op, gpus, bytes);
    (bytes < 65536 ? small : middle).push_back(cat - aic_s);
    (bytes < 65536 ? small_ratio : middle_ratio).push_back(cat / aic_s);
  }
  return {small_median(small), small_median(middle), small_median(small_ratio), small_median(middle_ratio)};
}

// What the catalog adds to aiconfigurator's time is a constant a call, not a slower link:
// over the 36 H100/H200/B200 groups (4 collectives x 2/4/8 GPUs) the excess at 256 KiB-4 MiB
// stays within 0.5-2x of the excess at 1-32 KiB in at least 3 of 4 groups, while the ratio
// falls (a rate error would keep the ratio and grow the excess 8-4096x). The medians over the
// groups are printed: the per-call cost of an isolated (eager, unpipelined) call.
TEST(NcclSmallMessages, CatalogExcessIsAPerCallConstant) {
  int groups = 0, constant = 0, ratio_falls = 0;
  for (const std::string gpu : {"h100", "h200", "b200"}) {
    std::vector<double> per_gpu;
    for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter", "alltoall"}) {
      for (int gpus : {2, 4, 8}) {
        const Excess e = excess_of(gpu, op, gpus);
        std::printf("  %s %-14s %d GPUs: excess %5.1f us (1-32 KiB) %5.1f us (256 KiB-4 MiB); ratio %.2f -> %.2f\n",
                    gpu.c_str(), op.c_str(), gpus, e.small_s * 1e6, e.middle_s * 1e6, e.small_ratio, e.middle_ratio);
        ++groups;
        const double k = e.middle_s / e.small_s;
        constant += (k > 0.5 && k < 2) ? 1 : 0;
        ratio_falls += e.middle_ratio < e.small_ratio ? 1 : 0;
        per_gpu.push_back(e.small_s);
      }
    }
    std::printf("  %s: median per-call excess %.1f us\n", gpu.c_str(), small_median(per_gpu) * 1e6);
  }
  EXPECT_EQ(groups, 36);
  EXPECT_GE(4 * constant, 3 * groups) << constant << " of " << groups;
  EXPECT_GE(4 * ratio_falls, 3 * groups) << ratio_falls << " of " << groups;
}

}  // namespace
}  // namespace twinsim
