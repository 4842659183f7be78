// Published sharded-data-parallel runs (PyTorch FSDP, ZeRO-3 alike: parameters, gradients and
// optimizer states sharded over the data-parallel group) from 8 to 992 GPUs as judges of the
// simulator's per-layer gathers and reduce-scatters and their overlap. Each scenario file
// under scenarios/validation/training/ names its source and assumptions; this table holds the
// published figures. Nothing was fitted to these runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"
#include "sim/validate/error_stats.hpp"

namespace twinsim {
namespace {

// What a source publishes per GPU: tokens/s or hardware TFLOP/s (the recomputed forward counted,
// as Narayanan et al.'s Eq. 3 does).
enum class Metric { tokens, hardware_tflops };

struct ShardedRun {
  const char* scenario;  // file under scenarios/validation/training/
  double published;
  Metric metric = Metric::tokens;
};

const ShardedRun kRuns[] = {
    // PyTorch blog "Maximizing training throughput using PyTorch FSDP" (IBM and Meta, 2024-03),
    // Table 1: 128 A100 80GB at 400 Gbps a node, 96 H100 80GB at 800 Gbps a node
    {"ibm-fsdp-llama2-7b-128gpu-a100.yaml", 3700},
    {"ibm-fsdp-llama2-34b-128gpu-a100.yaml", 700},
    {"ibm-fsdp-llama2-70b-128gpu-a100.yaml", 370},
    {"ibm-fsdp-llama2-7b-96gpu-h100.yaml", 7500},
    {"ibm-fsdp-llama2-34b-96gpu-h100.yaml", 1550},
    {"ibm-fsdp-llama2-70b-96gpu-h100.yaml", 800},
    // mosaicml/llm-foundry scripts/train/benchmarking/README.md, A100 40GB with 1600 Gbps RoCE
    {"mpt-7b-8gpu-a100-40gb.yaml", 3679},
    {"mpt-7b-16gpu-a100-40gb.yaml", 3645},
    {"mpt-7b-32gpu-a100-40gb.yaml", 3725},
    {"mpt-7b-64gpu-a100-40gb.yaml", 3665},
    {"mpt-7b-128gpu-a100-40gb.yaml", 3623},
    {"mpt-13b-8gpu-a100-40gb.yaml", 1668},
    {"mpt-13b-16gpu-a100-40gb.yaml", 1993},
    {"mpt-13b-32gpu-a100-40gb.yaml", 1998},
    {"mpt-13b-64gpu-a100-40gb.yaml", 1976},
    {"mpt-13b-128gpu-a100-40gb.yaml", 1972},
    {"mpt-30b-32gpu-a100-40gb.yaml", 857},
    {"mpt-30b-128gpu-a100-40gb.yaml", 865},
    {"mpt-70b-64gpu-a100-40gb.yaml", 276},
    {"mpt-70b-128gpu-a100-40gb.yaml", 376},
    // Zhang et al. 2022 (OPT), §2.4: "up to 147 TFLOP/s per GPU" on 992 A100 80GB (recompute counted)
    {"opt-175b-992gpu-a100.yaml", 147, Metric::hardware_tflops},
    // Narayanan et al. 2021 (SC'21) Table 2, "ZeRO-3 without Model Parallelism" (DeepSpeed) on
    // Selene's DGX A100s, the global batch fixed as the GPUs double
    {"narayanan2021-zero3-174.6b-384gpu.yaml", 144, Metric::hardware_tflops},
    {"narayanan2021-zero3-174.6b-768gpu.yaml", 88, Metric::hardware_tflops},
    {"narayanan2021-zero3-174.6b-1536gpu.yaml", 44, Metric::hardware_tflops},
    {"narayanan2021-zero3-529.6b-640gpu.yaml", 138, Metric::hardware_tflops},
    {"narayanan2021-zero3-529.6b-1120gpu.yaml", 98, Metric::hardware_tflops},
    {"narayanan2021-zero3-529.6b-2240gpu.yaml", 48, Metric::hardware_tflops},
};

// Twins of the A100-40GB outliers from the same llm-foundry sweep (scripts/train/benchmarking/
// sweep.sh at 300cc5c: one image, torch 1.13.1; each row's micro-batch and accumulation set by
// hand) on MosaicML's A100-80GB nodes, the same nominal 1600 Gbps RoCE, README table "A100 80GB"
// at 300cc5c: the 70B at the 40GB run's micro-batch 2 (32 GPUs, 16 accumulation steps) and on
// the same 64 GPUs at micro-batch 8; the 13B on the same single node (micro-batch 20, 3 steps);
// and that table's memory-tightest row, the 30B on 8 (60 GB of sharded state a GPU). Judged apart
// from the 27: they are not the runs.
const ShardedRun kTwins[] = {
    {"mpt-70b-32gpu-a100-80gb.yaml", 373},
    {"mpt-70b-64gpu-a100-80gb.yaml", 410},
    {"mpt-13b-8gpu-a100-80gb.yaml", 2065},
    {"mpt-30b-8gpu-a100-80gb.yaml", 788},
};

const std::string kTrainingDir = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/";

double predicted(const ShardedRun& run, const TrainingPrediction& p) {
  switch (run.metric) {
    case Metric::tokens: return p.throughput.tokens_per_s_per_gpu;
    case Metric::hardware_tflops: return p.throughput.hardware_tflops_per_gpu;
  }
  return 0;
}

const char* unit(Metric metric) { return metric == Metric::tokens ? "tokens/s/GPU" : "hw TFLOP/s"; }

// prediction / published - 1 for every run, in the list's order, printed
std::vector<double> judge(std::span<const ShardedRun> runs) {
  std::vector<double> errors;
  for (const ShardedRun& run : runs) {
    const Scenario s = load_scenario_file(kTrainingDir + run.scenario);
    const TrainingPrediction p = predict_training(s);
    const double e = predicted(run, p) / run.published - 1;
    errors.push_back(e);
    std::printf("%-40s %5d GPUs %9.1f vs %8.1f %s (%+6.1f%%), DP exposed %.3f s of %.3f s%s\n", run.scenario,
                static_cast<int>(s.plan.world_size()), predicted(run, p), run.published, unit(run.metric), 100 * e,
                p.breakdown.dp_comm_exposed_s, p.step_s, predict_memory(s).fits ? "" : " DOES NOT FIT");
  }
  return errors;
}

// The goal is every run within 15%. What the simulator reaches (2026-12-07, eighth
// session): 27 runs; see the test's print for median, max and the count within 15%. Outside:
// - DeepSpeed ZeRO-3 alone on 640-2,240 A100s (Narayanan Table 2, stack deepspeed-2021): 530B
//   +19.1% (640 GPUs), +23.4% (1,120), +34.8% (2,240); the 175B rows are inside (+5.1%, +12.9%,
//   +2.9% on 384, 768, 1,536). DeepSpeed's Python loop building each call's per-rank list
//   (zero_gather_list_us, zero_reduce_list_us) took them from +6.6/+17.1/+10.1% and
//   +20.2/+26.4/+41.9%. Under the
//   `deepspeed` stack (today's DeepSpeed: bucketed gathers prefetched beside compute) they were
//   +36%, +104%, +175%, +46%, +85%, +128%; with only the blocking per-tensor gathers and their
//   list copies +13%, +28%, +22%, +26%, +33%, +44%. deepspeed-2021 now also prices what v0.3.13's
//   stage3.py runs besides: per-tensor reduce-scatters, the recomputed forward's gathers and the
//   backward's re-gathers past stage3_max_reuse_distance, the persistent tensors' gather after
//   each step, and the device's copies around each call.
// (Ninth session: FSDP's root unit, the embedding and head gathered before each forward and
// reduce-scattered after each backward, moved every run 0.0-1.5 points toward its measurement;
// the figures below are from before it: 70B on 64 now +39.4%, 13B on 8 +22.3%, 7B on 96 H100s
// +18.9%, OPT +26.8%, 530B +19.1/+23.4/+34.7%.)
// - the 70B on 64 A100-40GB at micro-batch 2 (+40.2%; +47.6% before Composer's BACKWARD_POST
//   prefetch, stack.fsdp_prefetch_after_backward, was priced: it also took the 70B on 128 from
//   +15.0% to +11.8% and every other MPT run 0.7-2.7 points toward its measurement), the 13B on 8
//   GPUs with 16 accumulation steps (+23.5%), the 7B on 96 H100s (+20.7%; the blog names exposed
//   network time, ~10%, and HBM bandwidth), OPT-175B on 992 GPUs (+27.0%, its DP gathers hidden:
//   0.02 s exposed of 15.7 s).
// (Tenth session, nothing priced; what the sources say about three of them:
// - MPT on A100-40GB: the same llm-foundry table runs the 13B on 8 GPUs at MFU 43.9-44.3% at
//   every sequence length it lists (512 to 8,192), against 51.9-52.6% on 16-128 GPUs: one
//   drop, not the attention's. Its 8-GPU rows alone keep 26 GB of state a GPU and accumulate
//   16 micro-batches. The same table has a 1B row on 32 GPUs at 45.4% between 55.4-55.7% on
//   16 and 64, with no memory or network cause: a single-run spread of that size is in it.
// - the MosaicML table's fabric, 1,600 Gb/s RoCE on 8 A100-40GB, is OCI BM.GPU4.8's (16 x 100
//   Gb/s; taken as that cluster): "near line rate (above 185 GB per second) aggregated bandwidth
//   for each BM4.8 instance" in NCCL (blogs.oracle.com/cloud-infrastructure/?p=9809), 4% under
//   the 192 GB/s priced. At 185 GB/s the 70B's 1.61 GB per-layer gather takes 8.7 ms, so the
//   70B on 64's every collective serialised (about 2 s) is still short of the 4.2 s it misses:
//   not the fabric.
// - IBM's blog gives its H100 cluster as "800Gbps inter-node interconnect" and nothing more
//   (no NIC count, RoCE or InfiniBand, nor nccl-tests); the 8 x 100 Gb/s split stays assumed.)
// (Eleventh session: OPT-175B's own launcher, the run12.00 script in metaseq issue #223, confirms
// the scenario's micro-batch 8 without accumulation and ZeRO-3 resharding; its
// --distribute-checkpointed-activations, not priced, is about 1 point: see the scenario file.)
// (Twelfth session, nothing priced; the MPT outliers against their own sweep:
// - llm-foundry's sweep.sh (300cc5c) sets each A100-40GB row's micro-batch and accumulation by
//   hand (the 70B on 64: --microbatch_size 2 --accum 1; the 13B on 8: 4 and 16), runs 30 batches
//   (the README says 12 steps) in torch 1.13.1, and collect_results.py takes the last logged
//   throughput (the yamls' speed monitor: a 10-batch window). Neither row is auto-microbatching's
//   choice; the first batch is outside the window.
// - The 70B's measured steps, 4,096 / 276 = 14.84 s on 64 GPUs and 8,192 / 376 = 21.79 s on 128,
//   against 10.65 s and 19.56 s predicted: half the tokens take 68% of the time.
// - The same sweep's A100-80GB twins (kTwins, TwinsOnA100_80GB) are priced as the family is:
//   the 70B at micro-batch 2 +5.7%, the 70B on 64 GPUs +8.3%, the 13B on one node +7.5%. The
//   80GB table's memory-tightest row (30B on 8) is its highest, +14.4%, and its Oct 2023 re-run
//   at the same micro-batch on newer software ran 16% faster (916 tokens/s per GPU, b2a43a1).
// - Every 13B-on-8 A100-40GB row, 1,024 to 8,192 tokens a sequence, comes out +20.6 to +29.0%
//   (the 1,024, 4,096 and 8,192 rows checked with throwaway scenarios).
// - A slower fabric is not it: with 2 of the 8 NICs (50 GB/s a node) the 70B on 64 comes to +9%
//   but the 70B on 128 to -3.2% and the 30B on 32 from +3.4% to -9.7%; OCI measured 185 GB/s.
// Whether these torch-1.13 A100-40GB rows stay in the 15% goal is the reviewer's call.)
// (Thirteenth session, nothing priced: on Table 2's six rows the predicted exposed DP and
// optimizer time is exactly 0.0575 s per 1e9 parameters + 273 us per rank and layer; fitted to
// the measured steps less the predicted compute, the same two terms give 0.134 s and 258 us. The
// per-rank terms hold; the 530B's gap scales with the bytes. Figures: the 529.6b-2240gpu file.)
// (Fourteenth session: the MPT rows ran llm-foundry's attn_impl triton, flash-attn 1.0's Triton
// kernel, priced now at FlashAttention 1.x's measured curve (stack.attention_kernel flash1; the
// flash-attn chart's causal hd128 rate at 2k, 69 TFLOP/s against FlashAttention-2's 155). Every
// MPT row moved toward its measurement: the 7B rows +9.6..+12.5% -> +1.2..+4.0%, the 13B on 8
// +21.7 -> +14.4%, the 70B on 64 +39.4 -> +34.2%, on 128 +11.4 -> +6.9%; the 27: median 10.0 ->
// 5.1%, 20 -> 21 within 15%. The 70B on 64 keeps a 34% gap that no other MPT row shows.)
// (Fifteenth session: the IBM runs' step after the backward as fms-fsdp 5e522b4 runs it, torch's
// default foreach AdamW and clip_grad_norm_(1.0) (FmsFsdpStepRunsForeachAdamWAndClippingOverTheNodeShard):
// the 7B on 96 H100s +19.9 -> +17.8%, on 128 A100s +6.2 -> +4.9%; the 34B and 70B move by under
// 0.2 points, the two A100 rows predicted slow by 0.07 points away.)
// (Sixteenth session, nothing priced: the twin's FLOPs are Eq. 3's on Table 2's six rows
// (Table2JudgesCountTheFlopsAsEq3Does); the 530B's unpriced time a parameter is 2-3x the 175B's
// at like per-rank chunks and larger on fewer nodes (Zero3GapFollowsTheModelNotTheChunkNorTheRing),
// so no fabric figure alone can close it. Sources read: the 529.6b-2240gpu file.)
// The bands hold what is reached, so that a change that loses it fails.
TEST(ShardedDpRuns, ThroughputAgainstThePublishedRuns) {
  const std::vector<double> errors = judge(kRuns);
  const ErrorSummary t = summarize(errors);
  const auto within = std::count_if(errors.begin(), errors.end(), [](double e) { return std::abs(e) <= 0.15; });
  std::printf("%d runs, median |error| %.1f%%, max %.1f%%, %d within 15%%\n", t.count, 100 * t.median, 100 * t.max,
              static_cast<int>(within));
  ASSERT_EQ(t.count, 27);
  EXPECT_LT(t.median, 0.06);
  EXPECT_LT(t.max, 0.36);
  EXPECT_GE(within, 21);
}

// The outliers' micro-batch, model and node are priced as the family is where the same sweep ran
// them on 80 GB: each twin within 10% (what is reached: +1.7, +3.7, +0.3, +8.4%; +5.7, +8.3,
// +7.3, +13.6% before their flash-attn 1.0 Triton attention was priced, fourteenth session).
TEST(ShardedDpRuns, TwinsOnA100_80GB) {
  const std::vector<double> errors = judge(kTwins);
  ASSERT_EQ(errors.size(), 4u);
  for (std::size_t i = 0; i < errors.size(); ++i) EXPECT_LT(std::abs(errors[i]), 0.10) << kTwins[i].scenario;
}

// Every published run ran, so each must fit its device.
TEST(ShardedDpRuns, WhatRanFits) {
  for (const std::span<const ShardedRun> runs :
       {std::span<const ShardedRun>(kRuns), std::span<const ShardedRun>(kTwins)})
    for (const ShardedRun& run : runs)
      EXPECT_TRUE(predict_memory(load_scenario_file(kTrainingDir + run.scenario)).fits) << run.scenario;
}

// The MPT-7B rows keep 18 sequences of 2,048 tokens a GPU from 32 to 128 GPUs (and 12-16 at 8
// and 16): measured 3,623-3,725 tokens/s per GPU, a spread of 2.8% over 8 -> 128 GPUs. Its
// per-layer all-gather (202M bf16 parameters, ~0.4 GB; at most 2 ms at 1600 Gbps a node) hides
// behind its ~50 ms of forward compute per layer, so the prediction must stay as flat.
TEST(ShardedDpRuns, WeakScalingStaysFlatWhereTheGathersHide) {
  std::vector<double> tps;
  for (const ShardedRun& run : kRuns)
    if (std::string(run.scenario).rfind("mpt-7b-", 0) == 0)
      tps.push_back(predict_training(load_scenario_file(kTrainingDir + run.scenario)).throughput.tokens_per_s_per_gpu);
  ASSERT_EQ(tps.size(), 5u);
  const auto [lo, hi] = std::minmax_element(tps.begin(), tps.end());
  EXPECT_LT(*hi / *lo - 1, 0.03);
}

// fms-fsdp's step (5e522b4) after the backward: model.clip_grad_norm_(1.0), then torch 2.2's
// default AdamW, the foreach one (adamw.py: "we default to foreach"), over HSDP's node shard,
// Llama-2 7B's 6,738,415,616 parameters / 8 = 0.842e9 a GPU. Its bytes a parameter, by hand:
// foreach AdamW 72 + the bf16 gradient read twice (2 x 2) = 76; clipping's norm read and scaling
// pass over the bf16 gradients, 3 x 2 = 6; the bf16 weights' copy from the fp32 masters, 4 + 2 = 6:
// 88 B, 74.1 GB, at least 22.1 ms at the H100's datasheet 3,350 GB/s. A fused Adam without
// clipping (the torchtitan stack's default, 28 + 2 + 6 = 36 B) moves 30.3 GB, at least 9.1 ms:
// the scenario's step priced that way (10.1 ms) fails this floor. The optimizer is memory-bound,
// so the price also stays within twice the floor.
TEST(ShardedDpRuns, FmsFsdpStepRunsForeachAdamWAndClippingOverTheNodeShard) {
  const double shard = 6738415616.0 / 8, bytes = 88 * shard, floor_s = bytes / 3350e9;
  EXPECT_NEAR(floor_s, 0.0221, 0.0001);
  const TrainingPrediction p =
      predict_training(load_scenario_file(kTrainingDir + "ibm-fsdp-llama2-7b-96gpu-h100.yaml"));
  std::printf("IBM 7B on 96 H100: optimizer step %.1f ms (floor %.1f ms)\n", 1e3 * p.breakdown.optimizer_s,
              1e3 * floor_s);
  EXPECT_GE(p.breakdown.optimizer_s, floor_s);
  EXPECT_LT(p.breakdown.optimizer_s, 2 * floor_s);
}

// The 70B on 64 A100-40GB (+34%) has a memory twin in its own table and sweep that is priced
// right: the 30B on 32, also one micro-batch a step (128 sequences over 32 GPUs at 4). By hand,
// Composer's FSDP1 PURE keeps 16 B a parameter of sharded state (fp32 flat parameter and gradient,
// two fp32 moments): 29.95e9 / 32 x 16 = 15.0 GB against 64.86e9 / 64 x 16 = 16.2 GB; the
// checkpointed layer inputs 48 x 4 x 2,048 x 7,168 x 2 B = 5.6 GB against 80 x 2 x 2,048 x 8,192
// x 2 B = 5.4 GB; a layer's gathered bf16 weights 1.23 GB against 1.61 GB, at most four such
// buffers live (two gathered layers, a gradient, one being reduce-scattered): +1.2 - 0.2 + 1.5 =
// about 2.5 GB more for the 70B. So the 40 GB device's pressure, if it is the cause, would have
// to begin within about 2.5 GB of what the 30B runs at. The memory model puts them closer
// (reserved 25.7 and 26.6 GiB, fifteenth session), and predicts the 13B on 16 GPUs, inside 1% of
// its measurement, to reserve more (27.1 GiB). What the 70B on 64 alone has
// among the A100-40GB judges is 4,096 tokens a micro-batch (every other row has 8,192 or more):
// the least compute behind each layer's gather and reduce-scatter. Pins the finding; re-derive it
// when a price moves either row.
TEST(ShardedDpRuns, TheMpt70bOutlierHasAMemoryTwinPricedRight) {
  const Scenario s30 = load_scenario_file(kTrainingDir + "mpt-30b-32gpu-a100-40gb.yaml");
  const Scenario s70 = load_scenario_file(kTrainingDir + "mpt-70b-64gpu-a100-40gb.yaml");
  const double gib = 1024.0 * 1024 * 1024;
  const double r30 = predict_memory(s30).reserved_peak_bytes / gib, r70 = predict_memory(s70).reserved_peak_bytes / gib;
  const auto published = [](std::string_view name) {
    return std::find_if(std::begin(kRuns), std::end(kRuns), [&](const ShardedRun& r) { return r.scenario == name; })
        ->published;
  };
  const double e30 =
      predict_training(s30).throughput.tokens_per_s_per_gpu / published("mpt-30b-32gpu-a100-40gb.yaml") - 1;
  const double e70 =
      predict_training(s70).throughput.tokens_per_s_per_gpu / published("mpt-70b-64gpu-a100-40gb.yaml") - 1;
  std::printf("MPT 30B on 32: reserved %.2f GiB, %+.1f%%; 70B on 64: reserved %.2f GiB, %+.1f%%\n", r30, 100 * e30, r70,
              100 * e70);
  EXPECT_GE(r70 - r30, 0.0);
  EXPECT_LT(r70 - r30, 1.5);
  EXPECT_LT(std::abs(e30), 0.05);
  EXPECT_GT(e70, 0.25);
}

// Narayanan et al. Table 2's 175B under ZeRO-3 at a fixed batch of 1,536: the measured step,
// from Eq. 3 (96 B s l h^2 (1 + s/6h + V/16lh) = 4.511e18 FLOPs a step) over the GPUs' TFLOP/s,
// is 4.511e18 / (768 x 88e12) = 66.7 s on 768 GPUs and 4.511e18 / (1,536 x 44e12) = 66.7 s on
// 1,536: doubling the GPUs saves nothing, the per-layer gathers set the step. Predicted under
// deepspeed-2021 the two steps must stay within 10% of each other (under today's `deepspeed`,
// whose gathers hide behind compute, 1,536 GPUs came out 26% faster than 768).
TEST(ShardedDpRuns, Zero3StepStaysFlatWhenTheGpusDoubleAtAFixedBatch) {
  const double measured_768 = 4.511e18 / (768 * 88e12), measured_1536 = 4.511e18 / (1536 * 44e12);
  EXPECT_NEAR(measured_768 / measured_1536, 1.0, 0.01);
  const double s768 =
      predict_training(load_scenario_file(kTrainingDir + "narayanan2021-zero3-174.6b-768gpu.yaml")).step_s;
  const double s1536 =
      predict_training(load_scenario_file(kTrainingDir + "narayanan2021-zero3-174.6b-1536gpu.yaml")).step_s;
  std::printf("175B ZeRO-3 step: 768 GPUs %.1f s, 1,536 GPUs %.1f s (measured %.1f, %.1f)\n", s768, s1536, measured_768,
              measured_1536);
  EXPECT_NEAR(s1536 / s768, 1.0, 0.10);
}

// Narayanan et al. 2021 §5.1: Eq. 3, F = 96 B s l h^2 (1 + s/6h + V/16lh), "assumes activation
// recomputation and takes into account the floating-point operations associated with the extra
// forward pass"; Table 2's ZeRO-3 TFLOP/s are F over the step (its training-time column is Eq. 4,
// 8TP/nX, times the same 1 + s/6h + V/16lh). The judges compare the report's hardware TFLOP/s,
// so the twin's FLOPs a step must be Eq. 3's. By hand (s 2,048, V 51,200): the 174.6b (l 96,
// h 12,288) at B 1,536: 4.511e18; the 529.6b (l 105, h 20,480) at B 2,240: 1.9748e19, at B
// 2,560 (the 640-GPU row): 2.2569e19.
TEST(ShardedDpRuns, Table2JudgesCountTheFlopsAsEq3Does) {
  const struct {
    const char* scenario;
    double eq3_flops;
  } rows[] = {
      {"narayanan2021-zero3-174.6b-384gpu.yaml", 4.511e18},   {"narayanan2021-zero3-174.6b-768gpu.yaml", 4.511e18},
      {"narayanan2021-zero3-174.6b-1536gpu.yaml", 4.511e18},  {"narayanan2021-zero3-529.6b-640gpu.yaml", 2.2569e19},
      {"narayanan2021-zero3-529.6b-1120gpu.yaml", 1.9748e19}, {"narayanan2021-zero3-529.6b-2240gpu.yaml", 1.9748e19},
  };
  for (const auto& row : rows) {
    const TrainingPrediction p = predict_training(load_scenario_file(kTrainingDir + row.scenario));
    std::printf("%-40s hardware FLOPs %.4e, Eq. 3 %.4e (%+.2f%%)\n", row.scenario, p.hardware_flops, row.eq3_flops,
                100 * (p.hardware_flops / row.eq3_flops - 1));
    EXPECT_NEAR(p.hardware_flops / row.eq3_flops, 1.0, 0.01) << row.scenario;
  }
}

// Where Table 2's ZeRO-3 misses sit, per 1e9 parameters gathered: (measured step - predicted
// step) / P, the measured step being Eq. 3 over n x the published TFLOP/s. Every row gathers its
// whole model about three times a step whatever n is, so a fabric that moves 1-5 MB per-rank
// chunks slower than priced, or that slows with the node count, would miss the two models alike
// at like chunks and rings. Per-rank chunk of the largest weight (4h^2 fp16 / n) and nodes:
// 530b on 1,120 3.00 MB / 140 nodes, 175b on 384 3.15 MB / 48; 530b on 2,240 1.50 MB / 280,
// 175b on 768 1.57 MB / 96; 530b on 640 5.24 MB / 80, 175b on 1,536 0.79 MB / 192. The 530B
// misses 2-3x more a parameter at like chunks, and more with 6.6x larger chunks on fewer nodes
// than the 175B on 1,536: what is unpriced follows the model (its >1e9-parameter weights under
// v0.3.13's 1e9 max_live / reuse thresholds, its 3.4 GB gather buffers), not Selene's fabric.
// Pins the finding (sixteenth session); re-derive it when either model's price moves.
TEST(ShardedDpRuns, Zero3GapFollowsTheModelNotTheChunkNorTheRing) {
  const auto unpriced_s_per_1e9 = [](const char* scenario, double eq3_flops, double published_tflops, double params) {
    const Scenario s = load_scenario_file(kTrainingDir + scenario);
    const double measured = eq3_flops / (static_cast<double>(s.plan.world_size()) * published_tflops * 1e12);
    const double u = (measured - predict_training(s).step_s) / (params / 1e9);
    std::printf("%-40s measured step %.1f s, unpriced %.4f s per 1e9 parameters\n", scenario, measured, u);
    return u;
  };
  const double p175 = 174.6e9, p530 = 529.6e9;
  const double b384 = unpriced_s_per_1e9("narayanan2021-zero3-174.6b-384gpu.yaml", 4.511e18, 144, p175);
  const double b768 = unpriced_s_per_1e9("narayanan2021-zero3-174.6b-768gpu.yaml", 4.511e18, 88, p175);
  const double b1536 = unpriced_s_per_1e9("narayanan2021-zero3-174.6b-1536gpu.yaml", 4.511e18, 44, p175);
  const double c640 = unpriced_s_per_1e9("narayanan2021-zero3-529.6b-640gpu.yaml", 2.2569e19, 138, p530);
  const double c1120 = unpriced_s_per_1e9("narayanan2021-zero3-529.6b-1120gpu.yaml", 1.9748e19, 98, p530);
  const double c2240 = unpriced_s_per_1e9("narayanan2021-zero3-529.6b-2240gpu.yaml", 1.9748e19, 48, p530);
  EXPECT_GT(c1120, 1.5 * b384);  // like chunks (3.0 / 3.15 MB), the 530B's ring 2.9x longer
  EXPECT_GT(c2240, 1.5 * b768);  // like chunks (1.50 / 1.57 MB), ring 2.9x longer
  EXPECT_GT(c640, 1.5 * b1536);  // the 530B's chunks 6.6x larger, its ring 2.4x shorter
}

}  // namespace
}  // namespace twinsim
