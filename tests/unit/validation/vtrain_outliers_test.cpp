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
// s16 adds what the layer time follows ((tp, hidden, micro-batch), never dp), that these rows'
// TP all-reduces are priced inside vTrain's measured NCCL curves, and the 8-way excess at equal
// work a GPU set against the all-reduces' price, with the serial-all-reduce trial's counts.
// The last tests hold what s15 measured against three candidate prices (none priced):
// a rendezvous of the tp ranks at each TP all-reduce, syncs inside the pass, and narrow
// 8-way GEMMs; and a discrete switch in the code vTrain ran that separates 8-way TP with
// one-sample micro-batches (Megatron's fused softmax falling back to torch), now priced
// (stack softmax: megatron_2023) at about an eighth of the jump it coincides with.
#include <gtest/gtest.h>

#include "scenario/load.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cost/collective_cost.hpp"
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
  device_only.host_op_s = 0, device_only.host_microbatch_s = 0, device_only.host_torch_op_s = 0;
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

// A layer's measured time per micro-batch (ms) in the odd pp-1 rows of one (tp, micro-batch,
// hidden): within each (dp, global batch) the iteration's growth from its fewest layers to its
// most, over n micro-batches x the layers added (T = a + n (c + e L): e = dT / (n dL)); the
// median over those (dp, global batch). Measured times only: nothing predicted.
// `dp` > 0 keeps that data-parallel degree only.
double measured_layer_ms(const std::vector<VtrainRow>& rows, int tp, int micro_batch, int hidden, int dp = 0) {
  std::map<std::pair<int, int>, std::vector<const VtrainRow*>> by_run;  // (dp, global batch)
  for (const VtrainRow& r : rows) {
    if (r.pp == 1 && r.tp == tp && r.micro_batch == micro_batch && r.hidden == hidden && (dp == 0 || r.dp == dp)) {
      by_run[{r.dp, r.global_batch}].push_back(&r);
    }
  }
  std::vector<double> slopes;
  for (auto& [run, v] : by_run) {
    const auto [lo, hi] =
        std::minmax_element(v.begin(), v.end(), [](auto* a, auto* b) { return a->layers < b->layers; });
    if ((*hi)->layers == (*lo)->layers) continue;
    const int n = run.second / (micro_batch * run.first);
    slopes.push_back(1e3 * ((*hi)->measured_s - (*lo)->measured_s) / (n * ((*hi)->layers - (*lo)->layers)));
  }
  EXPECT_FALSE(slopes.empty()) << "tp " << tp << " mb " << micro_batch << " h " << hidden;
  return slopes.empty() ? 0 : median_of(slopes);
}

// The six TP all-reduces a layer and micro-batch runs under full recompute (forward 2: the
// attention projection's and fc2's row-parallel outputs; recompute 2; backward 2: qkv's and
// fc1's column-parallel input gradients), each of the fp16 activation s x b x h x 2 bytes,
// at the catalog's DGX A100 price (within 10% of vTrain's measured all-reduce, VtrainAllReduce).
double layer_tp_allreduces_ms(int tp, int micro_batch, int hidden) {
  const ClusterSpec node = catalog_node("dgx-a100-80gb");
  const double bytes = 1024.0 * micro_batch * hidden * 2;  // seq 1024 on every vTrain row
  return 6e3 * collective_time_s(node, CollectiveOp::all_reduce, {tp, tp}, bytes);
}

// Rendezvous of the tp ranks at each TP all-reduce (the expected max over ranks of each
// segment's host time, not its mean). If the host waited there, each segment would cost the
// slowest rank's host time plus the all-reduce, so a host-bound layer would take the tp-1
// host floor plus its six all-reduces at least: the 4-way h2048 groups run faster than that.
// If it waited only for the others to arrive, the layer's excess over tp 1, f(tp), is
// E[max of tp host times] - mean: concave in tp with f(1) = 0 for any distribution of
// independent ranks (E max_(n+1) - E max_n = integral F^n (1 - F), falling in n), so
// f(4) >= 3/7 f(8), i.e. e4 - e1 >= 3/4 (e8 - e4). Measured, one-sample tp-1 floor e1 =
// 3.10 ms (h1024, host-bound): e4 - e1 = 0.23 / -0.27 ms where 3/4 (e8 - e4) = 0.55 / 0.80
// (two-sample micro-batches, h1024 / h2048; one-sample: 0.35 / -0.05 vs 1.15 / 1.33): 2 and
// 4 ranks show almost none of what 8 show. Nor does the code make the host wait there:
// ProcessGroupNCCL's calls are asynchronous, on their own stream, and wait() holds the host
// only under NCCL_BLOCKING_WAIT (pytorch torch/lib/c10d/ProcessGroupNCCL.hpp), which
// Megatron-DeepSpeed 2255b61 never sets; a fast rank's device waits in the NCCL kernel and
// catches up on work its host queued meanwhile, so a step costs the slowest rank's total
// host time, whose excess over the mean shrinks as sqrt(segments), not one max per segment.
TEST(VtrainOutliers, AWaitForTheSlowestTensorParallelRankDoesNotFitTheRuns) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  const double e1 = measured_layer_ms(rows, 1, 1, 1024);
  EXPECT_NEAR(e1, 3.10, 0.10);
  for (const int mb : {1, 2}) {
    const double floor_4 = e1 + layer_tp_allreduces_ms(4, mb, 2048);                // 3.57 / 3.80 ms
    EXPECT_LT(measured_layer_ms(rows, 4, mb, 2048), floor_4 - 0.3) << "mb " << mb;  // 3.05 / 2.84 ms
  }
  for (const int hidden : {1024, 2048}) {
    const double e4 = measured_layer_ms(rows, 4, 2, hidden), e8 = measured_layer_ms(rows, 8, 2, hidden);
    EXPECT_LT(e4 - e1 + 0.2, 0.75 * (e8 - e4)) << "h " << hidden;
  }
}

// At 8-way TP a micro-batch of one sequence costs more a layer than one of two, at both
// hidden sizes (4.99 / 4.82 ms vs 4.06 / 3.90 ms) though the device's work doubles: no
// device-time price (narrow GEMMs at tp 8 included) can fall as work doubles, and the 4 MiB
// all-reduce of h2048 x 1 costs 0.76 ms more a layer than the same 4 MiB of h1024 x 2, so
// no collective price does it either. Below 8-way, doubling the micro-batch never saves
// more than 0.3 ms (tp 4 h2048: 3.05 -> 2.84). What switches at tp 8 x one sequence, in the
// code vTrain ran (microsoft/Megatron-DeepSpeed 2255b61, megatron/model/fused_softmax.py,
// is_kernel_available; the same test in vTrain's replica, src/model/fused_softmax.py): the
// fused scale-mask-softmax needs b x heads-per-GPU divisible by 4, and 16 heads / 8 = 2, so
// b = 1 runs forward_torch_softmax instead: .float(), * scale, masked_fill_, Softmax,
// .half() (and their 5 backward nodes) in fp32, in the forward, the recompute and the
// backward. That is 12 more ops a layer; at 5-25 us of host each (the stack's sources) and
// 2^21 fp32 elements a pass it is 0.1-0.3 ms of host and ~0.15 ms of device, a fraction
// of the 0.9 ms step (priced since: TheSoftmaxFallbackIsPricedAtAnEighthOfTheJump).
TEST(VtrainOutliers, EightWayOneSequenceMicroBatchesCostMoreThanTwo) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  for (const int hidden : {1024, 2048}) {
    EXPECT_GT(measured_layer_ms(rows, 8, 1, hidden) - measured_layer_ms(rows, 8, 2, hidden), 0.6) << "h " << hidden;
    for (const int tp : {1, 2, 4}) {
      EXPECT_GT(measured_layer_ms(rows, tp, 2, hidden), measured_layer_ms(rows, tp, 1, hidden) - 0.3)
          << "tp " << tp << " h " << hidden;
    }
  }
  EXPECT_GT(measured_layer_ms(rows, 8, 1, 2048) - measured_layer_ms(rows, 8, 2, 1024), 0.5);
}

// The fallback as megatron-eager prices it (softmax: megatron_2023, models/megatron_softmax.hpp):
// 4 more calls a pass at 9.49 us, in the forward, the recompute and the backward, 0.114 ms a
// layer; the layer is host-bound there (device 0.9 ms against 3.3 ms of host), so its device
// kernels (~0.05 ms a pass) add nothing. Each tp8 one-sequence row moves by that a layer and
// micro-batch, and no other row moves; 0.114 ms is an eighth of the measured 0.94 / 0.92 ms
// jump above, which stays unexplained (the rows stay 27-30% fast).
TEST(VtrainOutliers, TheSoftmaxFallbackIsPricedAtAnEighthOfTheJump) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  const ClusterSpec cluster = catalog_cluster("dgx-a100-80gb");
  const StackSpec stack = catalog_stack("megatron-eager");
  StackSpec kernel = stack;
  kernel.softmax = "kernel";
  const ValidationReport priced = validate(rows, vtrain_scenarios(rows, cluster, stack));
  const ValidationReport unpriced = validate(rows, vtrain_scenarios(rows, cluster, kernel));
  int moved = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const VtrainRow& r = rows[i];
    const double delta = priced.rows[i].predicted_s - unpriced.rows[i].predicted_s;
    const bool falls_back = r.tp == 8 && r.micro_batch == 1;
    if (!falls_back) {
      EXPECT_EQ(delta, 0) << "row " << r.index;
      continue;
    }
    ++moved;
    // per layer and micro-batch on the slowest stage: the whole step's layers over pp
    const double passes = static_cast<double>(r.global_batch) / (r.micro_batch * r.dp) * r.layers / r.pp;
    EXPECT_NEAR(delta / passes * 1e3, 12 * 9.49e-3, 0.01) << "row " << r.index;
    EXPECT_LT(priced.rows[i].signed_error(), -0.2) << "row " << r.index;
  }
  EXPECT_EQ(moved, 17);
}

// Host syncs inside the pass (a finite run-ahead): Megatron-DeepSpeed 2255b61 has none in a
// layer (no .item(), .cpu() or synchronize() in megatron/model, megatron/core/tensor_parallel
// or megatron/mpu; its forward/backward-compute timers synchronize, but they are log level 2,
// DummyTimer at the default --timing-log-level 0). The sync a micro-batch found is get_batch's
// broadcast_data (sizes_cuda.cpu(), megatron/core/tensor_parallel/data.py), which would cost
// once a micro-batch (c in T = a + n (c + e L)), yet the near-tie groups' excess is in e, a
// layer's time: measured e - predicted e = +0.90 ms at tp2/mb2/h2048 and +0.95 at tp4/mb4/
// h2048 (device share 0.85, 0.95), where host-bound groups (tp2/mb1/h1024, tp4/mb2/h1024,
// share 0.34, 0.39) are within 0.05 ms.
TEST(VtrainOutliers, TheNearTieExcessIsALayersTimeNotAMicroBatchs) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const OddRowErrors e = odd_row_errors();
  std::vector<VtrainRow> predicted = e.rows;
  for (std::size_t i = 0; i < predicted.size(); ++i) predicted[i].measured_s *= 1 + e.error[i];
  const auto excess_ms = [&](int tp, int mb, int hidden) {
    return measured_layer_ms(e.rows, tp, mb, hidden) - measured_layer_ms(predicted, tp, mb, hidden);
  };
  EXPECT_GT(excess_ms(2, 2, 2048), 0.6);
  EXPECT_GT(excess_ms(4, 4, 2048), 0.6);
  EXPECT_LT(std::abs(excess_ms(2, 1, 1024)), 0.2);
  EXPECT_LT(std::abs(excess_ms(4, 2, 1024)), 0.2);
}

// What a layer's time follows in the odd pp-1 rows (s16): the tensor-parallel degree, the
// hidden size and the micro-batch, not the data-parallel degree. Within each (tp, hidden,
// micro-batch) measured at two or more dp degrees, a layer's time per micro-batch spreads at
// most 6.7% (tp 1 h2048 one-sequence: 3.47 / 3.60 / 3.37 ms at dp 2 / 4 / 8); at tp 4 the
// 4 GPUs of dp 1 and the 8 of dp 2 run a layer within 1.4% (h1024: 3.46 / 3.46, 3.33 / 3.33,
// 3.93 / 3.94 ms; h2048: 3.05 / 3.09, 2.83 / 2.87, 5.08 / 5.05). So eight busy hosts and
// GPUs on both sockets cost a layer nothing: the 8-way excess belongs to the 8-rank TP group.
// And the groups' offsets are the group's own (the same at every dp): tp 2 h2048 two-sequence
// (4.76 / 4.90 / 4.80 ms, predicted 3.92) and tp 4 h2048 two-sequence (2.83 / 2.87 ms,
// below every tp-1 floor, predicted 3.39) sit 17-18% off on opposite sides.
TEST(VtrainOutliers, ALayersTimeFollowsTensorParallelHiddenAndMicroBatchNotDataParallel) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  std::map<std::tuple<int, int, int>, std::set<int>> dps;  // (tp, hidden, micro-batch) -> dp
  for (const VtrainRow& r : rows)
    if (r.pp == 1) dps[{r.tp, r.hidden, r.micro_batch}].insert(r.dp);
  int groups = 0;
  for (const auto& [key, set] : dps) {
    const auto [tp, hidden, mb] = key;
    std::vector<double> by_dp;
    for (const int dp : set) {
      // a slope needs one global batch at two layer counts
      std::map<int, std::set<int>> layers_by_batch;
      for (const VtrainRow& r : rows)
        if (r.pp == 1 && r.tp == tp && r.hidden == hidden && r.micro_batch == mb && r.dp == dp)
          layers_by_batch[r.global_batch].insert(r.layers);
      const bool sloped = std::any_of(layers_by_batch.begin(), layers_by_batch.end(),
                                      [](const auto& entry) { return entry.second.size() > 1; });
      if (sloped) by_dp.push_back(measured_layer_ms(rows, tp, mb, hidden, dp));
    }
    if (by_dp.size() < 2) continue;
    ++groups;
    const auto [lo, hi] = std::minmax_element(by_dp.begin(), by_dp.end());
    EXPECT_LT(*hi / *lo - 1, 0.08) << "tp " << tp << " h " << hidden << " mb " << mb;
    if (tp == 4) {
      EXPECT_LT(*hi / *lo - 1, 0.02) << "h " << hidden << " mb " << mb;
    }
  }
  // measured: 22 groups; tp 2 h2048 x 2 at 4.82 ms; tp 4 h2048 x 2 at 2.84 ms, tp 1 h1024 x 1 at 3.10
  EXPECT_GE(groups, 20);
  EXPECT_GT(measured_layer_ms(rows, 2, 2, 2048), 4.6);
  EXPECT_LT(measured_layer_ms(rows, 4, 2, 2048), measured_layer_ms(rows, 1, 1, 1024) - 0.2);
}

// The TP all-reduces of these rows (s x b x h x 2 bytes: 2 MiB at h1024 x 1 to 32 MiB at
// h2048 x 8) lie inside vTrain's own measured NCCL curves, which the catalog holds
// (nccl_a100/allreduce_{2,4,8}gpu.csv, from 1 MiB): priced from measurement, not extrapolated.
// At 8 ranks those curves are flat from 1 to 4 MiB (92.8, 93.3, 95.8 us: a latency floor
// twice the 4-rank 51-77 us), as S. Bekman's independent DGX A100 nccl-tests are (101.9,
// 101.4, 101.5 us; microbench/nccl_allreduce_a100_8gpu_nvlink_mlengineering.csv).
TEST(VtrainOutliers, TheirTensorParallelAllReducesArePricedFromVtrainsMeasuredCurves) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const ClusterSpec node = catalog_node("dgx-a100-80gb");
  int tp_rows = 0;
  for (const VtrainRow& r : select_half(read_vtrain_csv(kOutlierCsv), "odd")) {
    if (r.tp == 1) continue;
    ++tp_rows;
    const double bytes = 2.0 * r.seq_len * r.micro_batch * r.hidden;
    EXPECT_GE(bytes, 2.0 * (1 << 20));
    EXPECT_LE(bytes, 32.0 * (1 << 20));
    const CollectiveCost c = collective_cost(node, CollectiveOp::all_reduce, {r.tp, r.tp}, bytes);
    EXPECT_TRUE(c.measured && !c.extrapolated) << "row " << r.index;
  }
  EXPECT_GT(tp_rows, 300);
  const auto us = [&](int ranks, double mib) {
    return 1e6 * collective_time_s(node, CollectiveOp::all_reduce, {ranks, ranks}, mib * (1 << 20));
  };
  EXPECT_NEAR(us(8, 1), us(8, 4), 5);  // the flat 8-rank floor
  EXPECT_GT(us(8, 2), 1.5 * us(4, 2));
}

// At the same work a GPU the 8-way layer costs ~0.9 ms more than the 4-way one; the
// all-reduces' own measured price, even in series, gives about 60% of it. tp 8 with micro-batch 2b and tp 4 with b
// run the same GEMM FLOPs a GPU, the same host op list and the same b x heads-per-GPU
// attention batches (so the same softmax path); the 8-way layer's six all-reduces carry
// twice the bytes over twice the ranks. Measured excess e8(2b) - e4(b), b = 1, 2, 4: h1024
// 0.60, 0.40, 0.62 ms; h2048 0.85, 1.80, 1.36 ms (mean 0.94). The difference of the
// catalog's six all-reduces, 6 [AR8(2x) - AR4(x)], is 0.24, 0.34, 0.69 / 0.34, 0.69, 1.07 ms
// (mean 0.56): were the all-reduces in series with the host (vTrain's own predictor puts
// them so: CommNodes on the GPU's stream after each layer's traced kernels and gaps,
// VIA-Research/vTrain f8dda84 src/predictor.py), they would give 60% of the excess; where
// the model hides them under the host (issued_compute_s), none of it. Tried in s16 and left
// off: the host pass plus the pass's TP collectives in series for megatron-eager, host figures
// refitted on the even rows (100 us an op, 3,500 us a micro-batch): 444 trust rows toward,
// 308 away, 882 -> 905 within 15%, the tp rows' median -10.8% -> -1.0%, but 53 tp-2/4 rows
// leave 15% (+16..+26%): the 2- and 4-way host-bound groups show none of that price (the
// rendezvous test above: tp 4 h2048 runs below the tp-1 floor), and PyTorch 2.0.1's
// ProcessGroupNCCL does not hold the host for a synchronous all-reduce (no NCCL_BLOCKING_WAIT).
TEST(VtrainOutliers, EightWayExcessAtTheSameWorkAGpuIsNotTheAllReducesPrice) {
  if (!std::filesystem::exists(kOutlierCsv)) GTEST_SKIP() << kOutlierCsv << " not found";
  const std::vector<VtrainRow> rows = select_half(read_vtrain_csv(kOutlierCsv), "odd");
  double excess_sum = 0, price_sum = 0;
  int pairs = 0;
  for (const int hidden : {1024, 2048}) {
    for (const int b : {1, 2, 4}) {
      const double excess = measured_layer_ms(rows, 8, 2 * b, hidden) - measured_layer_ms(rows, 4, b, hidden);
      const double price = layer_tp_allreduces_ms(8, 2 * b, hidden) - layer_tp_allreduces_ms(4, b, hidden);
      EXPECT_GT(excess, 0.3) << "h " << hidden << " b " << b;
      EXPECT_LT(price, 1.2) << "h " << hidden << " b " << b;
      excess_sum += excess, price_sum += price, ++pairs;
    }
  }
  EXPECT_GT(excess_sum / pairs, 0.8);
  EXPECT_GT(excess_sum, 1.4 * price_sum);
}

}  // namespace
}  // namespace twinsim
