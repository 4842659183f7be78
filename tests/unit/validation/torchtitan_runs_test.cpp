// torchtitan's published runs (PyTorch-native training: FSDP2 with TP, PP and CP,
// torch.compile, float8, async TP) as judges of the torchtitan stacks. Each scenario file
// under scenarios/validation/training/torchtitan-* names its source and the published
// figures in a comment; this table holds the figures. Nothing here was fitted to these runs:
// the stacks' and GPUs' figures come from component measurements named in their files.
// Tokens/s per GPU as torchtitan logs it (tokens of a step over its time and the GPUs);
// memory is torch.cuda.max_memory_reserved, the worst rank, against memory.reserved_peak_bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"
#include "sim/validate/error_stats.hpp"

namespace twinsim {
namespace {

struct TorchtitanRun {
  const char* scenario;  // file under scenarios/validation/training/
  double tokens_per_s_per_gpu;
  double reserved_gib;  // 0: not published
  // before this stack existed (commit f355f46: a stack of grad_reduce_fp32 alone, the GPU
  // without its 500 W limit, Megatron's selective recompute), for the record
  double before_tokens_per_s_per_gpu;
  double before_peak_gib;
};

const TorchtitanRun kRuns[] = {
    // benchmarks/llama3_h100_202412_torchtitan.md, Tables 1-6 (Grand Teton H100s, 96 GB, 500 W)
    {"torchtitan-llama31-8b-8gpu-fsdp.yaml", 5762, 82.4, 8988.8, 93.4},
    {"torchtitan-llama31-8b-8gpu-fsdp-compile.yaml", 6667, 77.0, 8988.8, 93.4},
    {"torchtitan-llama31-8b-8gpu-fsdp-compile-fp8.yaml", 8532, 76.8, 11094.7, 93.6},
    {"torchtitan-llama31-8b-128gpu-fsdp.yaml", 5605, 67.0, 9033.9, 78.3},
    {"torchtitan-llama31-8b-128gpu-fsdp-compile.yaml", 6514, 62.0, 9033.9, 78.3},
    {"torchtitan-llama31-8b-128gpu-fsdp-compile-fp8.yaml", 8380, 61.8, 11163.6, 78.7},
    {"torchtitan-llama31-8b-8gpu-cp1-32k.yaml", 3890, 83.9, 4924.2, 41.8},
    {"torchtitan-llama31-8b-8gpu-cp2-64k.yaml", 2540, 84.2, 2996.5, 42.1},
    {"torchtitan-llama31-8b-8gpu-cp4-128k.yaml", 1071, 84.0, 1682.3, 42.1},
    {"torchtitan-llama31-8b-8gpu-cp8-256k.yaml", 548, 84.5, 896.3, 42.1},
    {"torchtitan-llama31-70b-256gpu-tp8.yaml", 829, 71.9, 938.4, 37.5},
    {"torchtitan-llama31-70b-256gpu-tp8-async.yaml", 876, 67.6, 1205.3, 37.5},
    {"torchtitan-llama31-405b-512gpu-pp8-1f1b.yaml", 100, 82.5, 129.4, 33.1},
    {"torchtitan-llama31-405b-512gpu-pp8-interleaved.yaml", 128, 72.7, 168.4, 34.4},
    {"torchtitan-llama31-405b-512gpu-cp1-32k.yaml", 76, 75.3, 93.2, 33.1},
    {"torchtitan-llama31-405b-512gpu-cp2-64k.yaml", 47, 75.9, 68.4, 33.2},
    {"torchtitan-llama31-405b-512gpu-cp4-128k.yaml", 31, 77.1, 44.7, 33.2},
    {"torchtitan-llama31-405b-512gpu-cp8-256k.yaml", 16, 84.9, 26.4, 33.2},
    // benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (the same H100s)
    {"torchtitan-async-llama31-70b-256gpu-bf16-tp.yaml", 597.3, 0, 769.8, 0.0},
    {"torchtitan-async-llama31-70b-256gpu-bf16-async.yaml", 652.4, 0, 910.4, 0.0},
    {"torchtitan-async-llama31-70b-256gpu-fp8-tp.yaml", 809.8, 0, 938.4, 0.0},
    {"torchtitan-async-llama31-70b-256gpu-fp8-async.yaml", 942.4, 0, 1205.3, 0.0},
    {"torchtitan-async-llama31-8b-64gpu-bf16-tp.yaml", 4378, 0, 6734.2, 0.0},
    {"torchtitan-async-llama31-8b-64gpu-bf16-async.yaml", 4809.4, 0, 8352.2, 0.0},
    {"torchtitan-async-llama31-8b-64gpu-fp8-tp.yaml", 5078.1, 0, 7162.8, 0.0},
    {"torchtitan-async-llama31-8b-64gpu-fp8-async.yaml", 5570.1, 0, 9464.1, 0.0},
    // benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md (H200 SXM, 700 W)
    {"torchtitan-trainy-llama31-8b-h200-32gpu.yaml", 10938, 47.96, 12052.0, 80.9},
    {"torchtitan-trainy-llama31-8b-h200-64gpu.yaml", 10753, 46.97, 12043.7, 79.1},
};

const std::string kTrainingDir = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/";
constexpr double kGiB = 1024.0 * 1024 * 1024;

struct Judged {
  std::vector<double> throughput_errors, memory_errors, before_errors;
  std::vector<double> tokens_per_s;  // predicted, in kRuns' order
  int predicted_not_to_fit = 0;
};

// Every run predicted, its errors printed (prediction / published - 1).
Judged judge_all() {
  Judged j;
  for (const TorchtitanRun& run : kRuns) {
    const Scenario s = load_scenario_file(kTrainingDir + run.scenario);
    const TrainingPrediction p = predict_training(s);
    const MemoryReport m = predict_memory(s);
    const double tps = p.throughput.tokens_per_s_per_gpu, e = tps / run.tokens_per_s_per_gpu - 1;
    j.throughput_errors.push_back(e);
    j.before_errors.push_back(run.before_tokens_per_s_per_gpu / run.tokens_per_s_per_gpu - 1);
    j.tokens_per_s.push_back(tps);
    // the caching allocator's reserve (memory.reserved_peak_bytes), as torchtitan logs it
    const double reserved_gib = static_cast<double>(m.reserved_peak_bytes) / kGiB;
    const double allocated_gib = static_cast<double>(m.peak_bytes) / kGiB;
    std::printf("%-55s %9.1f tok/s/GPU vs %8.1f (%+6.1f%%, before %+6.1f%%)", run.scenario, tps,
                run.tokens_per_s_per_gpu, 100 * e, 100 * (run.before_tokens_per_s_per_gpu / run.tokens_per_s_per_gpu - 1));
    if (run.reserved_gib > 0) {
      const double me = reserved_gib / run.reserved_gib - 1;
      j.memory_errors.push_back(me);
      std::printf("   reserved %5.1f GiB (allocated %5.1f) vs %5.1f (%+6.1f%%)%s", reserved_gib, allocated_gib,
                  run.reserved_gib, 100 * me, m.fits ? "" : " DOES NOT FIT");
      if (!m.fits) ++j.predicted_not_to_fit;
    }
    std::printf("\n");
  }
  return j;
}

// The goal is 10% median and 20% max on throughput and 10% median on the reserved
// memory; what the stacks reach (2026-12-06): throughput median 22.7%, max 59.8% (before:
// 36.2%, 73.7%), every run still predicted fast. Memory: the allocated peak against the
// allocator's reserve was 26.5% median, 50.2% max; with torchtitan's eager fp32 loss
// (stack.loss_kernel eager_fp32) 13.3%, 28.8%; as the caching allocator model reserves it
// (memory.reserved_peak_bytes) 10.2%, 25.2%, the 70B and 405B runs still predicted low; with
// FSDP2's buffers in their streams' pools (stack.fsdp_stream_pools) 6.4%, 24.2% (the goal's
// median met; the 70B TP 8 and 405B runs still 10-24% low); with loss_parallel's fused backward
// as it allocates ((grad_input + exp(x)) * grad_output: four fp32 logit-sized tensors, not three)
// 5.9%, 24.2%: the 70B TP 8 runs -20.9/-15.9% -> -10.0/-4.3%, nothing else moves; with PyTorch's
// ring attention backward's gathered K,V and fp32 dK,dV (torch_cp_backward_bytes) 5.9%, 22.0%:
// 405B CP 2/4/8 -15.2/-16.5/-24.2% -> -11.8/-14.1/-19.5%, the 8B CP runs unmoved (their peak is
// the loss's), the 405B PP 8 1F1B run (-22.0%) now the largest.
// Throughput with PyTorch's async TP as it runs (stack.tp_overlap: matmul) and vanilla TP's
// layout copies (stack.sp_layout_copies): median 22.5%, max 51.0% (8B TP 8 async bf16). With
// PyTorch's ring attention's exchange (stack.cp_exchange: torch_all_gather): median 22.5%, max
// 48.3%; 405B CP 2/4/8 +34.8/+31.7/+48.9% -> +31.1/+26.4/+38.0%, 8B CP 2/4/8 1-2 points. The
// bands hold what is reached, so that a change that loses it fails; what is missing is named
// in hardware/catalog/README.md ("torchtitan's published runs"). With FSDP2's copies on the
// compute stream (stack.fsdp_copies), PyTorch's own flash kernels (attention_kernel:
// sdpa_flash, measured in this repo) and the 2024-12 runs' foreach AdamW
// (stack.optimizer_foreach): median 20.6%, max 59.6%; the 8k runs 3-8 points closer (8B FSDP
// +10.9% to +18.2%, H200 +8.3/+10.1%), the CP runs 4-16 points further (8B CP 8 +59.6%):
// PyTorch's flash forward runs 20% faster at 128k than the README's figure held flat, so what
// CP misses is larger than before. TP as PyTorch runs it (torchtitan's op-level checkpointing
// gathers again, models/layer_ops.cpp; DTensor keeps the gathered input, stack.sp_gather_saved;
// async TP leaves each entry's gradient reduce-scatter unfused, stack.async_tp_entry_grad_unfused):
// median 17.9%, max 59.6%; 8B TP 8 bf16/fp8 +30.1/+21.8% -> +21.7/+12.2%, async +45.7/+43.4% ->
// +34.3/+28.0%, 70B async +21.6/+23.4/+13.0% -> +17.0/+21.3/+8.8%, 405B PP 8 and CP 1-1.4 points
// closer; the 70B vanilla TP runs 0-0.4 points further (no re-gather double-counted).
// PyTorch's symmetric-memory ops as they run (stack.tp_overlap: symmetric_memory: each fused
// matmul tp GEMMs of m / tp rows, one per weight; the fused reduce-scatter's sum over its stacked
// partials): median 14.7%, max 56.1%; every async run closer, nothing else moves: 8B async
// bf16/fp8 +34.3/+28.0% -> +29.7/+23.3%, 70B async +17.0/+21.3/+8.8% -> +11.2/+17.4/+3.4%,
// 405B PP 8 +20.3/+22.2% -> +13.6/+15.7%, 405B CP 1/2/4/8 2-5 points. torchtitan's wq, wk, wv
// and w1, w3 as the separate GEMMs they are, the input gradient the sum of their dgrads
// (stack.separate_projections): median 12.7%, max 55.9%; 25 runs closer (8B TP 8 bf16/fp8
// +21.7/+12.2% -> +13.7/+3.4%, async +29.7/+23.3% -> +21.3/+13.9%), the 70B vanilla TP runs
// further (2024 TP 8 -1.3% -> -6.5%, 2025 fp8 TP +1.1% -> -4.3%).
// Eighth session, attention's clock its own draw's under the 500 W limit (0.8795, not the mix's
// up to 1: sim/cost/power_limit.hpp): median 17.9% -> 15.7%, max 56.1% -> 54.9%. Both eighth-session
// changes together (symmetric memory and separate projections with attention's clock): median
// 11.3%, max 54.7%. Ninth session, PyTorch's ring attention's calls after the first run
// without the causal mask at that kernel's own measured rate (torch_ring_calls,
// attention_kernel_noncausal_efficiency_by_seq: its backward 5.5% slower per pair than the
// causal curve's at 32k): the six CP 2-8 runs 1-4 points closer (8B CP 2/4/8 +9.7/+47.5/+54.7%
// -> +8.4/+44.5/+50.8%, 405B +24.5/+19.7/+36.9% -> +23.6/+18.1/+34.4%), nothing else moves:
// median 11.3%, max 50.8%. Tenth session, the compiled ring waits for its whole exchange (a
// traced functional collective is waited for at once and Inductor of 2024-12 kept it beside its
// wait: sim/training/torch_cp_exchange.hpp): the six CP 2-8 runs 2-16 points closer (8B CP 2/4/8
// +8.2/+44.4/+50.7% -> +6.2/+40.5/+45.7%, 405B +23.5/+17.9/+34.5% -> +13.4/+8.0/+18.3%), nothing
// else moves: median 10.7% -> 9.7%, max 50.7% -> 45.7%.
TEST(TorchtitanRuns, ThroughputAndMemoryAgainstThePublishedRuns) {
  const Judged j = judge_all();
  const ErrorSummary t = summarize(j.throughput_errors), m = summarize(j.memory_errors);
  const ErrorSummary before = summarize(j.before_errors);
  std::printf("throughput: %d runs, median |error| %.1f%%, max %.1f%% (before %.1f%%, %.1f%%); memory: %d runs, "
              "median %.1f%%, max %.1f%%; %d that ran predicted not to fit\n",
              t.count, 100 * t.median, 100 * t.max, 100 * before.median, 100 * before.max, m.count, 100 * m.median,
              100 * m.max, j.predicted_not_to_fit);
  ASSERT_EQ(t.count, 28);
  EXPECT_LT(t.median, 0.12);
  EXPECT_LT(t.max, 0.47);
  EXPECT_LT(t.median, before.median - 0.10);
  EXPECT_LT(m.median, 0.065);
  EXPECT_LT(m.max, 0.23);
  EXPECT_EQ(j.predicted_not_to_fit, 0);  // of the 20 runs whose memory is published, all ran
}

// torch.compile against eager, the same plan (Tables 1 and 3): measured 6,667 / 5,762 = 1.157
// on 8 GPUs and 6,514 / 5,605 = 1.162 on 128; before the stacks both came out the same. The
// eager stack's unfused element-wise kernels (hf_bf16's census) and its host time make the
// difference: predicted 1.196 and 1.197 (+3.4%, +3.0%); with FSDP2's copies and PyTorch's
// flash kernels and foreach AdamW (both stacks alike) 1.186 and 1.189 (+2.5%, +2.3%).
TEST(TorchtitanRuns, CompileAgainstEagerAsMeasured) {
  const Judged j = judge_all();
  const auto ratio = [](double compiled, double eager) { return compiled / eager; };
  // kRuns: 0 eager, 1 compiled on 8 GPUs; 3 eager, 4 compiled on 128
  for (const auto& [eager, compiled] : {std::pair{0, 1}, std::pair{3, 4}}) {
    const double predicted = ratio(j.tokens_per_s[compiled], j.tokens_per_s[eager]);
    const double measured = ratio(kRuns[compiled].tokens_per_s_per_gpu, kRuns[eager].tokens_per_s_per_gpu);
    std::printf("%s: compiled / eager predicted %.3f, measured %.3f\n", kRuns[eager].scenario, predicted, measured);
    EXPECT_NEAR(predicted / measured, 1.0, 0.06);
  }
}

// The 8B CP runs (Table 2: kRuns 6-9) keep 32,768 tokens a GPU at every degree, so their steps
// differ only by the ring: cp - 1 non-causal calls after the causal one, each of (s/cp)^2 / 2
// query-key pairs and of the same shapes at every cp (32,768 queries x 16,384 keys or the
// reverse, 32 heads; _templated_ring_attention's i <= rank / i > rank branches). torchtitan
// counts labels.numel() before context_parallel shards them (train.py, 9dec370) and divides by
// the time and cp (non_data_parallel_size), so a step lasts 32,768 / TPS: 8.424, 12.902, 30.596,
// 59.796 s, and a ring step (s_c - s_1) / (c - 1) 4.477 s at CP 2, 7.391 at CP 4, 7.339 at CP 8.
// By hand from this repo's kernels (measured_2026-11-26/h100/attention.csv, flash non-causal
// 16,384^2 x 16 heads: forward 6.526 ms, forward+backward 24.095 ms; a ring step is four of those
// calls' pairs): forward 26.10 ms, backward 70.28 ms; full checkpointing runs the forward twice:
// 122.5 ms at 700 W, / 0.8795 (attention's 500 W clock, sim/cost/power_limit.hpp) 139.3 ms a
// layer, 4.457 s over 32 layers: CP 2's ring step within 0.4%. CP 4 and 8 make the same calls
// and take 95 ms a layer a step more (1.65x); not the calls' shapes (the same), the merges and
// fp32 accumulations (torch_cp_pass_bytes, compiled: 50 bytes an element of the rank's 32,768 x
// 4,096, about 3 ms a layer a step at HBM rates), nor the exchange (the sim's cp_comm, all of it
// waited: 0.40 / 0.87 / 1.83 s, 12 / 9 / 8 ms a layer a step at CP 2 / 4 / 8). So whatever CP 4/8 miss
// is not a cost every ring step pays: this holds the priced step to CP 2's measured one and
// says how far CP 4/8's are (printed). Predicted (2026-12-07): 5.06 / 4.90 / 4.85 s (+13.1%,
// -33.7%, -33.9%): at CP 2 the waited exchange (0.40 s) is not seen in the measured step.
TEST(TorchtitanRuns, ARingStepCostsItsKernelsAtCp2) {
  const int first = 6;  // kRuns' 8B CP 1; CP 2, 4, 8 follow
  const int degrees[] = {1, 2, 4, 8};
  double published_s[4], predicted_s[4];
  for (int i = 0; i < 4; ++i) {
    const TorchtitanRun& run = kRuns[first + i];
    const Scenario s = load_scenario_file(kTrainingDir + run.scenario);
    ASSERT_EQ(s.plan.cp, degrees[i]) << run.scenario;
    ASSERT_EQ(s.training->seq_len / s.plan.cp, 32768) << run.scenario;
    published_s[i] = 32768.0 / run.tokens_per_s_per_gpu;
    predicted_s[i] = 32768.0 / predict_training(s).throughput.tokens_per_s_per_gpu;
  }
  double ring_step_predicted[4] = {0}, ring_step_published[4] = {0};
  for (int i = 1; i < 4; ++i) {
    ring_step_published[i] = (published_s[i] - published_s[0]) / (degrees[i] - 1);
    ring_step_predicted[i] = (predicted_s[i] - predicted_s[0]) / (degrees[i] - 1);
    std::printf("8B CP %d: a ring step %.3f s published, %.3f s predicted (%+.1f%%)\n", degrees[i],
                ring_step_published[i], ring_step_predicted[i],
                100 * (ring_step_predicted[i] / ring_step_published[i] - 1));
  }
  EXPECT_NEAR(ring_step_published[1], 4.477, 0.002);  // the hand figures above
  EXPECT_NEAR(ring_step_predicted[1] / ring_step_published[1], 1.0, 0.15);
  // the same calls at every degree: the priced step does not grow with cp
  for (int i = 2; i < 4; ++i) EXPECT_NEAR(ring_step_predicted[i] / ring_step_predicted[1], 1.0, 0.10);
}

// Issue #54, the CP judges read against their source. Tables 2 and 6 (benchmarks/
// llama3_h100_202412_torchtitan.md) give "Local batch size 1" (8B) and "Local batch size 8"
// (405B); torchtitan 9dec370 counts a step's tokens as labels.numel() on every rank before
// create_context_parallel_ctx shards them (train.py: `ntokens_since_last_log += labels.numel()`
// comes before the CP context) and divides by the time and non_data_parallel_size = cp x tp x pp
// (parallel_dims.py), so TPS/GPU is a data-parallel rank's sequences over the GPUs they span:
// global batch x sequence / GPUs, as the simulator divides. FSDP shards over dp_shard and cp
// flattened (parallel_dims.py `_flatten(mesh_dim_name="dp_shard_cp")`, parallelize_llama.py
// `dp_mesh_dim_names = ("dp_shard_cp",)`): 8 ranks in every row, FSDP 1 x CP 8 included. By hand:
// 8B 32,768 tokens a GPU a step in each row, 405B 4,096 (8 x 32,768 / 64 GPUs a data-parallel
// rank at CP 1). The runs fit that reading; nothing in the table is misread.
TEST(TorchtitanRuns, TheCpRowsAreReadAsTorchtitanCountsThem) {
  struct Row {
    int first, local_batch;
    double tokens_per_gpu;
  };
  for (const Row& table : {Row{6, 1, 32768}, Row{14, 8, 4096}}) {  // kRuns' 8B CP 1-8, 405B CP 1-8
    for (int i = 0; i < 4; ++i) {
      const TorchtitanRun& run = kRuns[table.first + i];
      const Scenario s = load_scenario_file(kTrainingDir + run.scenario);
      const int gpus = s.plan.dp * s.plan.cp * s.plan.tp * s.plan.pp;
      ASSERT_EQ(s.plan.cp, 1 << i) << run.scenario;
      EXPECT_EQ(s.training->global_batch / s.plan.dp, table.local_batch) << run.scenario;
      EXPECT_EQ(s.training->micro_batch, 1) << run.scenario;
      EXPECT_EQ(s.plan.recompute, Recompute::full) << run.scenario;  // "Full activation checkpointing"
      EXPECT_EQ(static_cast<double>(s.training->global_batch) * s.training->seq_len / gpus, table.tokens_per_gpu)
          << run.scenario;
      EXPECT_EQ(s.plan.zero_shard_group_size(), 8) << run.scenario;  // dp_shard_cp
    }
  }
}

// Issue #54, the shape of the 8B CP 4/8 miss in the published steps alone (32,768 / TPS: 8.424,
// 12.901, 30.596, 59.796 s). Beyond the line through CP 1 and CP 2 (4.477 s a ring step, what
// the kernels give, ARingStepCostsItsKernelsAtCp2), CP 4 takes 8.74 s more and CP 8 20.03 s:
// a ratio of 2.29, the ring steps' 7 / 3 = 2.33 within 2%, not the sequence's 2 nor its square's
// 4 (by hand). So the missing time is a constant 2.91 / 2.86 s a ring step (about 90 ms a layer a
// step) from CP 4 on, and CP 2 does not pay it: a mechanism linear in the sequence (the data
// loader's full-sequence tokenizing on every CP rank, the RoPE table CP shards each step, any
// per-step exchange) priced at every degree, as strong as CP 4/8 need, takes CP 2 from +6% to -14.5%;
// whatever is missing turns on between CP 2 and CP 4 (group size, a memory threshold).
TEST(TorchtitanRuns, TheCp4And8ExcessIsPerRingStepAndSparesCp2) {
  const int first = 6;  // kRuns' 8B CP 1; CP 2, 4, 8 follow
  double step_s[4];
  for (int i = 0; i < 4; ++i) step_s[i] = 32768.0 / kRuns[first + i].tokens_per_s_per_gpu;
  const double ring_s = step_s[1] - step_s[0];
  const double excess4 = step_s[2] - (step_s[0] + 3 * ring_s), excess8 = step_s[3] - (step_s[0] + 7 * ring_s);
  std::printf("8B CP 4/8 beyond the CP 1-2 line: %.2f / %.2f s, %.3f / %.3f s a ring step (ratio %.2f)\n", excess4,
              excess8, excess4 / 3, excess8 / 7, excess8 / excess4);
  EXPECT_NEAR(excess4, 8.74, 0.01);  // the hand figures above
  EXPECT_NEAR(excess8 / excess4 / (7.0 / 3.0), 1.0, 0.03);
  EXPECT_GT(std::abs(excess8 / excess4 / 2.0 - 1), 0.10);  // not in proportion to the sequence
  // the same per-step cost priced at CP 2 too: its prediction swings by more than 15 points
  const Scenario cp2 = load_scenario_file(kTrainingDir + kRuns[first + 1].scenario);
  const double cp2_predicted_s = 32768.0 / predict_training(cp2).throughput.tokens_per_s_per_gpu;
  const double before = step_s[1] / cp2_predicted_s - 1, after = step_s[1] / (cp2_predicted_s + excess4 / 3) - 1;
  std::printf("8B CP 2 with that cost a ring step: %+.1f%% -> %+.1f%%\n", 100 * before, 100 * after);
  EXPECT_GT(before - after, 0.15);
}

// Issue #54, candidate (d): cudaMalloc retries near the cap. A retry needs a request that fails
// at the device's limit, so it lands at the step's peak. If the ring's all-gathered K,V were at
// that peak, the peak would grow with cp by (cp - 1) x 512 MiB (by hand: 32,768 tokens x 32 heads
// x 128 x 2 bytes x K and V = 512 MiB a rank, repeated K,V as torchtitan passes them): 3.5 GiB
// from CP 1 to CP 8. Table 2 publishes 83.9 / 84.2 / 84.0 / 84.5 GiB, a span of 0.6 GiB, so the
// runs peak elsewhere, at a point the same at every cp (32,768 tokens a GPU at each: likely the
// eager fp32 loss over 32,768 x 128,256 logits, about 40 GB of bf16 and fp32 copies). Whatever
// retries there are, CP 2 pays them too, and CP 2's ring step is its kernels (above). The
// simulator must peak there as well: its reserve at CP 1..8 within 1 GiB (now 86.0-86.2).
TEST(TorchtitanRuns, TheCpRunsPeakWhereTheRingIsNot) {
  const int first = 6;  // kRuns' 8B CP 1; CP 2, 4, 8 follow
  double published_lo = 1e9, published_hi = 0, predicted_lo = 1e9, predicted_hi = 0;
  for (int i = 0; i < 4; ++i) {
    const TorchtitanRun& run = kRuns[first + i];
    const double reserved =
        static_cast<double>(predict_memory(load_scenario_file(kTrainingDir + run.scenario)).reserved_peak_bytes) / kGiB;
    published_lo = std::min(published_lo, run.reserved_gib);
    published_hi = std::max(published_hi, run.reserved_gib);
    predicted_lo = std::min(predicted_lo, reserved);
    predicted_hi = std::max(predicted_hi, reserved);
  }
  const double gathered_growth_gib = (8 - 1) * 0.5;
  std::printf("8B CP 1-8 reserved: published %.1f-%.1f GiB, predicted %.1f-%.1f GiB; a ring-set peak would grow %.1f\n",
              published_lo, published_hi, predicted_lo, predicted_hi, gathered_growth_gib);
  EXPECT_NEAR(published_hi - published_lo, 0.6, 1e-9);  // the hand figures above
  EXPECT_LT(published_hi - published_lo, gathered_growth_gib / 2);
  EXPECT_LT(predicted_hi - predicted_lo, 1.0);
}

// Every published run ran, so each must fit: the 28 judged (the 8 async-TP runs publish no
// memory but ran) and 405B on 128 H100s as FSDP 16 x TP 8 (docs/performance.md, 2024). The
// same document reports the 1D layout out of memory ("We do see OOM for 1D parallelism"): by
// hand, FSDP 128's shards alone (fp32 parameter, gradient and two Adam moments, 16 bytes a
// parameter / 128) are 47 GiB and full checkpointing keeps 126 layer inputs of 2 x 8192 x
// 16384 bf16 (63 GiB): more than the 95 GiB device, so it must be refused.
TEST(TorchtitanRuns, WhatRanFitsAndWhatRanOutOfMemoryIsRefused) {
  int checked = 0;
  for (const TorchtitanRun& run : kRuns) {
    EXPECT_TRUE(predict_memory(load_scenario_file(kTrainingDir + run.scenario)).fits) << run.scenario;
    ++checked;
  }
  EXPECT_TRUE(predict_memory(load_scenario_file(kTrainingDir + "torchtitan-llama31-405b-128gpu-fsdp16-tp8.yaml")).fits);
  ++checked;
  std::printf("%d published runs that ran checked to fit\n", checked);
  const MemoryReport oom = predict_memory(load_scenario_file(kTrainingDir + "torchtitan-llama31-405b-128gpu-fsdp-oom.yaml"));
  EXPECT_FALSE(oom.fits);
  EXPECT_GT(static_cast<double>(oom.peak_bytes) / kGiB, 47.0 + 63.0);
}

}  // namespace
}  // namespace twinsim
