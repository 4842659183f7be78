// Where vTrain's held-out rows outside 15% lie (141 of the 720 odd rows under the catalog's
// DGX A100 and megatron-eager; all but 20 predicted too fast). Two features separate them
// from the 579 inside; neither is priced yet, and each test below fails once its feature is,
// so the figures here must then be updated with the new ones.
//  1. 8-way tensor parallelism. vTrain's measured iterations at tp 8, one-sample micro-batches,
//     take 4.9-5.2 ms a layer and micro-batch (e.g. h1024 L24 gb16: 1,949.9 ms / (16 x 24)),
//     where tp 2 and tp 4 take 3.0-3.45 ms and the prediction is the host floor, 3.30 ms
//     (30 rows x 110 us, megatron-eager.yaml). The device alone is priced 0.9 ms a layer there,
//     its six 2 MiB all-reduces at vTrain's own measured 93 us each (nccl_a100/allreduce_8gpu.csv),
//     so even adding them to the host time in series (3.86 ms) leaves most of it unexplained.
//  2. Device time near host time. Below 8-way TP, a row whose device-only prediction (the same
//     stack with no host time) is under 0.55 of its prediction is never outside 15%; the rows
//     at 0.85-0.95, where device and host time nearly tie, are predicted 17% fast at the median:
//     the prediction takes the longer of the two a layer pass, the runs take more.
// vTrain itself prices both from a per-(hidden, tp, micro-batch) kernel trace of the real code,
// gaps between kernels included (VIA-Research/vTrain src/predictor.py, parse_traces; trace
// file "trace_{hidden}_{tp}_{mb}"), which is the key that separates the errors here.
#include <gtest/gtest.h>

#include "scenario/load.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/validate/csv_validation.hpp"

namespace twinsim {
namespace {

const std::string kOutlierCsv =
    std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/vtrain/vtrain_single_node_a100.csv";

struct OddRowErrors {
  std::vector<VtrainRow> rows;
  std::vector<double> error;         // predicted / measured - 1 (negative: predicted too fast)
  std::vector<double> device_share;  // device-only prediction / prediction
};

OddRowErrors odd_row_errors() {
  OddRowErrors out;
  out.rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  const ClusterSpec cluster = catalog_cluster("dgx-a100-80gb");
  const StackSpec stack = catalog_stack("megatron-eager");
  StackSpec device_only = stack;
  device_only.host_op_s = 0, device_only.host_microbatch_s = 0;
  const ValidationReport full = validate(out.rows, vtrain_scenarios(out.rows, cluster, stack));
  const ValidationReport dev = validate(out.rows, vtrain_scenarios(out.rows, cluster, device_only));
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    out.error.push_back(full.rows[i].signed_error());
    out.device_share.push_back(dev.rows[i].predicted_s / full.rows[i].predicted_s);
  }
  return out;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool outside_15(double error) { return std::abs(error) > 0.15; }

TEST(VtrainOutliers, EightWayTensorParallelIsPredictedFastOnEveryRow) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const OddRowErrors e = odd_row_errors();
  ASSERT_EQ(e.rows.size(), 720u);
  std::map<int, std::vector<double>> by_tp;
  int tp8_outside = 0;
  for (std::size_t i = 0; i < e.rows.size(); ++i) {
    by_tp[e.rows[i].tp].push_back(e.error[i]);
    if (e.rows[i].tp == 8) {
      EXPECT_LT(e.error[i], -0.10) << "row " << e.rows[i].index;  // measured: -10.8% .. -32.2%
      tp8_outside += outside_15(e.error[i]) ? 1 : 0;
    }
  }
  ASSERT_EQ(by_tp[8].size(), 42u);
  EXPECT_GE(tp8_outside, 25);  // measured: 30 of 42
  // tp 8: median -22.5%; tp 1, 2, 4: -0.9%, -1.3%, -0.5%. Unpriced 8-way cost, not a general bias.
  EXPECT_LT(median_of(by_tp[8]), -0.15);
  for (const int tp : {1, 2, 4}) {
    EXPECT_LT(std::abs(median_of(by_tp[tp])), 0.05) << "tp " << tp;
  }
}

TEST(VtrainOutliers, BelowEightWayTheMissesSitWhereDeviceTimeNearsHostTime) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const OddRowErrors e = odd_row_errors();
  std::vector<double> host_bound, near_tie;
  int host_bound_outside = 0, near_tie_fast_outside = 0, tp8_host_bound_outside = 0;
  for (std::size_t i = 0; i < e.rows.size(); ++i) {
    const double share = e.device_share[i];
    if (e.rows[i].tp == 8) {
      tp8_host_bound_outside += (share < 0.55 && outside_15(e.error[i])) ? 1 : 0;
      continue;
    }
    if (share < 0.55) {
      host_bound.push_back(e.error[i]);
      host_bound_outside += outside_15(e.error[i]) ? 1 : 0;
    } else if (share >= 0.85 && share < 0.95) {
      near_tie.push_back(e.error[i]);
      near_tie_fast_outside += e.error[i] < -0.15 ? 1 : 0;
    }
  }
  // measured: 229 host-bound rows, none outside 15% (median +2.3%); 69 near-tie rows,
  // median -16.8%, 42 of them more than 15% fast; 8-way TP: 23 host-bound rows, all outside.
  EXPECT_GE(host_bound.size(), 200u);
  EXPECT_EQ(host_bound_outside, 0);
  EXPECT_LT(std::abs(median_of(host_bound)), 0.05);
  EXPECT_GE(near_tie.size(), 50u);
  EXPECT_LT(median_of(near_tie), -0.10);
  EXPECT_GE(near_tie_fast_outside, 30);
  EXPECT_GE(tp8_host_bound_outside, 20);
}

}  // namespace
}  // namespace twinsim
