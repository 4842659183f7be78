// Predictions against published training throughput. Each scenario file under
// scenarios/validation/training/ names its source and the published figure in a comment;
// this table holds the figure and the band the prediction must stay in.
//
// Narayanan et al. 2021 (SC'21), Table 1: TFLOP/s per GPU counted with their Eq. 3,
// which includes the recomputed forward pass: compared with hardware_tflops_per_gpu.
// The scenarios run on the catalog's dgx-a100-80gb under the megatron-2021 stack, whose
// one figure fitted to this table (its GEMM library against today's cuBLASLt) was fitted on
// the even rows of Table 1 (1.7B, 7.5B, 39.1B, 145.6B, 529.6B); the odd rows are out of
// sample (hardware/catalog/stacks/megatron-2021.yaml).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {
namespace {

struct PublishedRun {
  const char* scenario;  // file under scenarios/validation/training/
  double tflops_per_gpu;
  double band;  // allowed relative deviation of the prediction
};

const PublishedRun kNarayanan2021Table1[] = {
    {"narayanan2021-table1-1.7b.yaml", 137, 0.10},   {"narayanan2021-table1-3.6b.yaml", 138, 0.10},
    {"narayanan2021-table1-7.5b.yaml", 142, 0.10},   {"narayanan2021-table1-18.4b.yaml", 135, 0.10},
    {"narayanan2021-table1-39.1b.yaml", 138, 0.10},  {"narayanan2021-table1-76.1b.yaml", 140, 0.10},
    {"narayanan2021-table1-145.6b.yaml", 148, 0.10}, {"narayanan2021-table1-310.1b.yaml", 155, 0.10},
    {"narayanan2021-table1-529.6b.yaml", 163, 0.10}, {"narayanan2021-table1-1t.yaml", 163, 0.10},
};

class Narayanan2021Table1 : public ::testing::TestWithParam<PublishedRun> {};

TEST_P(Narayanan2021Table1, HardwareTflopsPerGpuWithinBand) {
  const PublishedRun& run = GetParam();
  const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/" + run.scenario);
  const TrainingPrediction p = predict_training(s);
  const double predicted = p.throughput.hardware_tflops_per_gpu;
  EXPECT_NEAR(predicted / run.tflops_per_gpu, 1.0, run.band)
      << run.scenario << ": predicted " << predicted << " TFLOP/s per GPU, published " << run.tflops_per_gpu;
}

INSTANTIATE_TEST_SUITE_P(Published, Narayanan2021Table1, ::testing::ValuesIn(kNarayanan2021Table1),
                         [](const auto& info) {
                           std::string n = info.param.scenario;
                           n = n.substr(std::string("narayanan2021-table1-").size());
                           n = n.substr(0, n.size() - 5);
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return "size_" + n;
                         });

// S. Bekman's ml-engineering "When Is It Worth Upgrading GPUs?" runs of Llama-3.1-8B on one
// 8-GPU H200 node (HF transformers + DeepSpeed + Liger-Kernel + FlashAttention-3; the two
// scenario files say what ran). Its model FLOPs, as benchmark.py's estimate_tflos counts them:
// 6 x (dense parameters + vocabulary x hidden) per token and causal attention as
// 6 s^2 x head width x heads x layers, recompute excluded.
// One home with the trust intervals' validation cases (trust/validation_cases.hpp).
double mlengineering_model_flops(const ModelSpec& m, double seq) { return trust::bekman_model_flops(m, seq); }

double attention_core_s(const TrainingPrediction& p) {
  double s = 0;
  for (const OpPrediction& op : p.ops)
    if (op.name.starts_with(std::string(op_names::kAttnCore) + ".")) s += op.time_s * op.count;
  return s;
}

const std::string kTrainingDir = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/";

// The source's attention bucket: the FlashAttention kernels alone (bench_decompose.py counts
// the kernels whose name holds "flash"), without the copies Hugging Face's code runs around
// them (DynamicCache's, the gradients' layout), which its split puts with everything else:
// the attention rows priced with the op list's own kernels.
double flash_kernels_s(const std::string& file, std::vector<std::string> overrides = {}) {
  overrides.push_back("stack.layer_kernels=fused");
  return attention_core_s(predict_training(load_scenario_file(kTrainingDir + file, overrides)));
}

// The source's buckets share one clock (bench_decompose.py): the measured wall-clock step split
// by each bucket's share of the kernel time outside NCCL. So what a prediction is judged on is
// that share, the flash kernels' time over all the compute kernels' (the stream's busy time,
// the optimizer's and recompute's included), measured as the attention bucket's time over the
// step's: attention FLOPs at the bucket's rate over all FLOPs at the step's. `p`: the file's
// prediction as it runs.
double predicted_attention_share(const std::string& file, const TrainingPrediction& p) {
  const TimeBreakdown& b = p.breakdown;
  return flash_kernels_s(file) / (b.compute_s + b.recompute_s + b.optimizer_s);
}

double measured_attention_share(const ModelSpec& m, double seq, double attention_tflops, double step_tflops) {
  const double attention_flops = 6 * seq * seq * m.head_dim * m.heads * m.layers;
  return (attention_flops / attention_tflops) / (mlengineering_model_flops(m, seq) / step_tflops);
}

// The right-sized 8K step (ZeRO-2, no checkpointing), its wall clock split by kernel time:
// FlashAttention-3's kernels at 447 model TFLOP/s per GPU in the step, everything else at 463,
// the step at 461: the flash kernels 12.9% of the kernel time. The catalog's flash3 curves
// (the FA3 paper's H100 rates, not this run) give them 13.9% of the predicted kernel time, 7.6%
// more (read as kernel time, the bucket came out 3.5% fast: it is not; FlashAttention-2's curves
// make the kernels 69% slower). The step ran Hugging Face's own modeling
// code on a bf16 model (bench_decompose.py: no Liger), stack hf-deepspeed: its unfused
// RMSNorms, RoPE and SwiGLU counted by the census (hf_bf16). Judged within 10%: predicted
// 5.6% fast (16.1% fast under hf-deepspeed-liger's fused kernels, which this run did not use;
// 5.9% before DeepSpeed's ZeRO-2 buckets were all-reduced whole, as stage_1_and_2.py does;
// 6.2% and 17.2% before the stack's host time per micro-batch). The source also ran the step with
// Liger-Kernel: within 1.5% of this one, where the prediction's fused kernels take 11% off.
TEST(MlEngineeringLlama31H200, The8kStepAndItsAttentionWithinBand) {
  const std::string file = "mlengineering-llama31-8b-h200-8k-zero2.yaml";
  const Scenario s = load_scenario_file(kTrainingDir + file);
  const TrainingPrediction p = predict_training(s);
  const double seq = 8192, attention_flops = 6 * seq * seq * s.model.head_dim * s.model.heads * s.model.layers;
  const double measured_attention_s = attention_flops / 447e12;
  const double measured_step_s = mlengineering_model_flops(s.model, seq) / 461e12;
  const double share = predicted_attention_share(file, p), measured_share = measured_attention_share(s.model, seq, 447e12, 461e12);
  std::printf("8K ZeRO-2 step: predicted %.3f s, measured %.3f s (%+.1f%%); FlashAttention-3's share %.3f vs %.3f (%+.1f%%)\n",
              p.step_s, measured_step_s, 100 * (p.step_s / measured_step_s - 1), share, measured_share,
              100 * (share / measured_share - 1));
  EXPECT_NEAR(p.step_s / measured_step_s, 1.0, 0.10);
  EXPECT_NEAR(share / measured_share, 1.0, 0.10);
  EXPECT_GT(flash_kernels_s(file, {"stack.attention_kernel=flash2"}) / measured_attention_s, 1.5);  // the kernel matters
}

struct SweepRow {
  std::int64_t seq;
  double tflops_per_gpu;  // published, model FLOPs as mlengineering_model_flops counts them
  double peak_gib;        // published: torch.cuda.max_memory_reserved, the worst rank
};

const SweepRow kLongContextSweep[] = {{8192, 141, 16.3},   {32768, 324, 25.8},  {65536, 391, 37.5},
                                      {131072, 420, 66.5}, {196608, 422, 95.7}, {262144, 419, 124.5}};

Scenario long_context_run(std::int64_t seq, const std::vector<std::string>& more = {}) {
  std::vector<std::string> overrides = {"training.seq_len=" + std::to_string(seq)};
  overrides.insert(overrides.end(), more.begin(), more.end());
  return load_scenario_file(kTrainingDir + "mlengineering-llama31-8b-h200-long-context.yaml", overrides);
}

// ZeRO-3 + checkpointing + CPU AdamW offload, one sequence per GPU of 8K to 256K tokens.
// From 128K on, FlashAttention-3 takes 70-82% of the step (the source's split). At 8K the
// step is mostly the host's offloaded optimizer step, which the deepspeed stack prices at its
// measured time per parameter (offload_update_ns_per_param, hardware/catalog/stacks/
// deepspeed.yaml), fitted on this 8K step alone (within 2% here), and the 256K step fits the
// flash3 curves' one point past 16k (the 16k rate x 1.096, scripts/fa3_attention_to_catalog.py
// --long-gain-from). Held out and judged within 10%: 32K to 192K (+2.6%, +3.5%, +3.3%, +1.7%;
// with the 16k rate held flat past it +3.3%, +6.0%, +8.5%, +8.5%, and 256K +8.0%; before,
// +2.7%, +5.5%, +8.1%, +8.3%, +7.7% at the offload figure's fitting, +3.3%, +6.0%, +8.5%, +8.5%,
// +8.0% with the Hopper GEMM tile choices, gemm_tile_edges; from 128K on +4.5% to +6.7%
// before the host figure, +2.6% to +6.6% before the power-limited GEMM clock; FlashAttention-2's
// curves: 40-46% slow). With the host's DRAM-bandwidth floor alone (0.41 s for the GPU's
// 1B-parameter shard) the 8K and 32K steps came out 55% and 21% fast.
TEST(MlEngineeringLlama31H200, LongContextStepsWithinBand) {
  for (const SweepRow& r : kLongContextSweep) {
    const Scenario s = long_context_run(r.seq);
    const TrainingPrediction p = predict_training(s);
    const double measured_s = mlengineering_model_flops(s.model, static_cast<double>(r.seq)) / (r.tflops_per_gpu * 1e12);
    const bool fit = r.seq == 8192 || r.seq == 262144;
    std::printf("seq %6lld: predicted %8.3f s, measured %8.3f s (%+.1f%%)%s\n", static_cast<long long>(r.seq), p.step_s,
                measured_s, 100 * (p.step_s / measured_s - 1),
                r.seq == 8192 ? "  (fit: the stack's host time per parameter)" : fit ? "  (fit: flash3's 256k point)" : "");
    EXPECT_NEAR(p.step_s / measured_s, 1.0, fit ? 0.02 : 0.10) << "seq " << r.seq;
  }
  // the host figure is what carries the short steps: the bandwidth floor alone is far too fast
  const Scenario floor_only = long_context_run(8192, {"stack.offload_update_ns_per_param=0"});
  const double measured_8k_s = mlengineering_model_flops(floor_only.model, 8192) / (kLongContextSweep[0].tflops_per_gpu * 1e12);
  EXPECT_LT(predict_training(floor_only).step_s / measured_8k_s, 0.5);
}

// Peak memory. The allocator's reserve (what the source measured) holds what the simulator
// counts, the allocated tensors (DeepSpeed's reduce bucket among them), and more: the caching
// allocator's slack and what else DeepSpeed holds, 4.6-7.9 GiB here. Predicted 0.92-0.94 of
// the measured from 128K on (Liger's fused linear cross-entropy keeps no logits: with the fp32
// logits the op list keeps, 1.5-1.6x the measured, and 256K would not fit), and the growth
// per token, where the fixed share cancels, within 5%: 128K to 256K adds 56.0 GiB predicted,
// 58.0 measured.
TEST(MlEngineeringLlama31H200, LongContextPeakMemory) {
  auto peak_gib = [](const Scenario& s) { return static_cast<double>(predict_memory(s).peak_bytes) / (1 << 30); };
  for (const SweepRow& r : kLongContextSweep) {
    const double predicted = peak_gib(long_context_run(r.seq));
    const double with_logits = peak_gib(long_context_run(r.seq, {"stack.loss_kernel=logits"}));
    std::printf("seq %6lld: peak predicted %6.1f GiB, measured (reserved) %6.1f GiB (%+.1f%%); with fp32 logits %6.1f GiB\n",
                static_cast<long long>(r.seq), predicted, r.peak_gib, 100 * (predicted / r.peak_gib - 1), with_logits);
    EXPECT_LT(predicted, r.peak_gib) << "seq " << r.seq;  // allocated <= reserved
    if (r.seq >= 131072) {
      EXPECT_GT(predicted / r.peak_gib, 0.88) << "seq " << r.seq;
      EXPECT_GT(with_logits / r.peak_gib, 1.4) << "seq " << r.seq;
    }
  }
  const SweepRow& from = kLongContextSweep[3];
  const SweepRow& to = kLongContextSweep[5];
  const double growth = peak_gib(long_context_run(to.seq)) - peak_gib(long_context_run(from.seq));
  EXPECT_NEAR(growth / (to.peak_gib - from.peak_gib), 1.0, 0.05) << growth << " GiB";
}

// The same runs on one 8-GPU B200 node with FlashAttention-4 (no FA4 kernel sweep is
// published): the B200's flash4 curves take FA3's shape by sequence, their level set by the
// source's own kernel benchmark (bench_flash_attn.py: FA4 on the B200 1.88x FA3 on the H200 at
// 8k, forward and backward, the 8B model's causal attention) and one long-context point fitted
// to the 256K step (scripts/fa4_attention_to_catalog.py). Held out: the benchmark's 1.95x at
// 32k (1.93x). The offloaded optimizer step at the deepspeed stack's host time per parameter,
// fitted on the H200's 8K step. Judged, within 10%: the right-sized 8K ZeRO-2 step (no
// offload, Hugging Face's unfused kernels): -9.5%, its flash kernels 13.0% of the predicted
// kernel time against 11.7% measured; and the long-context steps 8K to 192K: +0.6%, +7.4%,
// +7.5%, +6.2%, +2.7%. The B200's own figures behind them, each from microbenchmarks
// (b200.yaml): its memory-bound kernels at 0.60 of its bandwidth (Liger-Kernel's RMSNorm on an
// H100 and a B200), its GEMMs past 5.5e11 FLOPs at PyTorch's measured single-product rate
// (pytorch/ao's 8192^3, 63.1%, where the curve had held XLA's batched 4 x 4096^3, 75%).
// Before: the 8K step -15.0% with the memory figure alone, -21.7% with neither (its share
// 15.2%), -22.8% before NCCL's 24 channels on the node; the long-context steps -1.0%, +3.0%,
// +3.5%, +4.1%, +1.9% with the memory figure alone, -1.5%, +1.8%, +2.5%, +3.6%, +1.7% with
// neither; before the host figure 8K to 64K came out 70%, 36% and 15% fast; with the flat FA3
// shape past 16k 128K and 192K came out +9% and +14% slow.
const SweepRow kB200LongContextSweep[] = {{8192, 167, 16.3},   {32768, 524, 25.9},  {65536, 719, 37.6},
                                          {131072, 836, 66.7}, {196608, 852, 95.7}, {262144, 852, 124.6}};

TEST(MlEngineeringLlama31B200, Flash4AtTheKernelBenchmarksRatioJudgesLongContext) {
  const Scenario s8k = load_scenario_file(kTrainingDir + "mlengineering-llama31-8b-b200-8k-zero2.yaml");
  const TrainingPrediction p8k = predict_training(s8k);
  const std::string b200 = "mlengineering-llama31-8b-b200-8k-zero2.yaml", h200 = "mlengineering-llama31-8b-h200-8k-zero2.yaml";
  const double seq8k = 8192;
  const double step8k = mlengineering_model_flops(s8k.model, seq8k) / 778e12;
  const double ratio_8k = flash_kernels_s(h200) / flash_kernels_s(b200);
  const double ratio_32k = flash_kernels_s(h200, {"training.seq_len=32768"}) / flash_kernels_s(b200, {"training.seq_len=32768"});
  std::printf("B200 8K ZeRO-2 step: predicted %.3f s, measured %.3f s (%+.1f%%); flash kernels' share %.3f vs %.3f; "
              "FA4 / FA3 %.3f at 8k (fit: 1.88), %.3f at 32k (benchmark: 1.95)\n",
              p8k.step_s, step8k, 100 * (p8k.step_s / step8k - 1), predicted_attention_share(b200, p8k),
              measured_attention_share(s8k.model, seq8k, 834e12, 778e12), ratio_8k, ratio_32k);
  EXPECT_NEAR(ratio_8k / 1.88, 1.0, 0.01);
  EXPECT_NEAR(ratio_32k / 1.95, 1.0, 0.03);
  EXPECT_NEAR(p8k.step_s / step8k, 1.0, 0.10);
  for (const SweepRow& r : kB200LongContextSweep) {
    const Scenario s = load_scenario_file(kTrainingDir + "mlengineering-llama31-8b-b200-long-context.yaml",
                                          {"training.seq_len=" + std::to_string(r.seq)});
    const TrainingPrediction p = predict_training(s);
    const double measured_s = mlengineering_model_flops(s.model, static_cast<double>(r.seq)) / (r.tflops_per_gpu * 1e12);
    const bool fit = r.seq == 262144;
    std::printf("B200 seq %6lld: predicted %8.3f s, measured %8.3f s (%+.1f%%)%s\n", static_cast<long long>(r.seq),
                p.step_s, measured_s, 100 * (p.step_s / measured_s - 1), fit ? "  (fit)" : "");
    EXPECT_NEAR(p.step_s / measured_s, 1.0, fit ? 0.02 : 0.10) << "seq " << r.seq;
  }
}

}  // namespace
}  // namespace twinsim
