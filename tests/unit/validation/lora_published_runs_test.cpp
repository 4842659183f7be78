// LoRA / QLoRA fine-tuning's peak memory against LitGPT's published resource tables
// (Lightning-AI/litgpt tutorials/resource-tables.md, 10/20/2023: finetune/lora.py on one
// A100-SXM4-40GB, bf16-true, micro-batch 1, r 8 on the query and value projections; "Max GPU
// RAM" is torch.cuda.max_memory_allocated in GB of 1e9 bytes at the longest Alpaca example,
// 1,304 tokens). Each scenario file names its source; nothing was fitted to these runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "models/litgpt_census.hpp"
#include "scenario/load.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/training/training_report.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim {
namespace {

struct LitgptRun {
  const char* scenario;  // under scenarios/validation/training/
  const char* base_dtype;
  double max_gpu_ram_GB;
  double band;  // allowed relative deviation of the predicted peak
};

const LitgptRun kLitgptLora[] = {
    // Each layer keeps what LitGPT's own code keeps (stack.layer_kernels litgpt_bf16, counted:
    // LitgptCensus below). Under Hugging Face's census (hf_bf16) these came out +2.8% / -11.2% /
    // +2.1% / -11.0%: its fp32 norm intermediates and every linear input stood in for LitGPT's
    // layer, which keeps 6.3 B per token, hidden unit and layer less in bf16, 5.0 more in NF4.
    {"litgpt-lora-llama2-7b-a100.yaml", "bf16", 21.30, 0.10},
    {"litgpt-lora-llama2-7b-a100.yaml", "nf4", 13.84, 0.10},
    {"litgpt-lora-llama2-13b-a100.yaml", "bf16", 38.12, 0.10},
    {"litgpt-lora-llama2-13b-a100.yaml", "nf4", 22.55, 0.10},
};

TEST(LitgptLora, PeakMemoryWithinBand) {
  for (const LitgptRun& run : kLitgptLora) {
    const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/" + run.scenario,
                                          {std::string("training.lora.base_dtype=") + run.base_dtype});
    const double predicted = static_cast<double>(predict_memory(s).peak_bytes) / 1e9;
    std::printf("%s %s: peak predicted %.2f GB, published %.2f GB (%+.1f%%)\n", run.scenario, run.base_dtype, predicted,
                run.max_gpu_ram_GB, 100 * (predicted / run.max_gpu_ram_GB - 1));
    EXPECT_NEAR(predicted / run.max_gpu_ram_GB, 1.0, run.band) << run.scenario << " " << run.base_dtype;
  }
}

// The same table's larger micro-batches (bf16, held out: nothing was fitted to any row):
// Llama 2 7B at micro-batch 2, 29.07 GB; 13B at micro-batch 2, OOM on the 40 GB A100.
TEST(LitgptLora, LargerMicroBatchesAsPublished) {
  const std::string dir = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/";
  const Scenario seven = load_scenario_file(dir + "litgpt-lora-llama2-7b-a100.yaml", {"training.micro_batch=2"});
  const double predicted = static_cast<double>(predict_memory(seven).peak_bytes) / 1e9;
  std::printf("Llama 2 7B micro-batch 2: peak predicted %.2f GB, published 29.07 GB (%+.1f%%)\n", predicted,
              100 * (predicted / 29.07 - 1));
  EXPECT_NEAR(predicted / 29.07, 1.0, 0.10);
  const Scenario thirteen = load_scenario_file(dir + "litgpt-lora-llama2-13b-a100.yaml", {"training.micro_batch=2"});
  EXPECT_FALSE(predict_memory(thirteen).fits);
}

// finetune/lora.py's defaults at lit_gpt 8641822: rank 8 on the query and value.
LoraSpec litgpt_default_lora() {
  LoraSpec lora;
  lora.rank = 8;
  lora.modules = (1u << static_cast<int>(LoraModule::q)) | (1u << static_cast<int>(LoraModule::v));
  return lora;
}

// LitGPT's LoRA layer (lit_gpt 8641822, r 8 on q and v, dropout 0.05, bf16 model), what it keeps
// for the backward, derived by hand from the storages scripts/litgpt_lora_saved_census.py catches
// (per token of Llama 2 7B: hidden 4096, 32 heads of 128, FFN 11008): the two norms' inputs
// 2 x 2h, dropout's bool mask h and copy 2h, the q/v delta 2 x 2h, the fused qkv 2 x 3h, roped q
// and k 2 x 2h, the attention output 2h (23 bytes per hidden unit: 94,208), SwiGLU's three
// FFN-wide tensors 6 x 11008 (66,048), two rsqrt 4, the adapters' x A 2 x 8 x 2 = 32, the fp32
// log-sum-exp 4 x 32 = 128: 160,420 B; plus zero_pad's int64 index of the 8,192 adapted columns
// once a layer. NF4 adds the inputs bitsandbytes' MatMul4Bit keeps for the frozen 4-bit qkv,
// proj, fc_1/fc_2 (one tensor) and proj: 3 x 2h + 2 x 11008 = 46,592 B a token.
TEST(LitgptCensus, LlamaTwoSevenBLayerByHand) {
  ModelSpec llama2;
  llama2.hidden = 4096, llama2.heads = 32, llama2.kv_heads = 32, llama2.head_dim = 128, llama2.ffn_hidden = 11008;
  LoraSpec lora = litgpt_default_lora();
  EXPECT_EQ(litgpt_lora_layer_saved_bytes(llama2, 1304, lora), 160420LL * 1304 + 8 * 8192);
  lora.base = LoraBase::nf4;
  EXPECT_EQ(litgpt_lora_layer_saved_bytes(llama2, 1304, lora), (160420LL + 46592) * 1304 + 8 * 8192);
}

// The script's own count, on its small layer (hidden 512, 4 heads of 128, FFN 1024, r 8, 128
// tokens, torch 2.15 on the CPU): 2,374,144 bytes a layer in bf16, 3,029,504 in NF4. The CPU's
// dropout keeps a bf16 noise tensor (2 bytes a hidden element), CUDA's a bool mask (1): the
// census is CUDA's, 128 x 512 bytes less.
TEST(LitgptCensus, MatchesTheScriptsCountLessTheCpusDropoutNoise) {
  ModelSpec small;
  small.hidden = 512, small.heads = 4, small.kv_heads = 4, small.head_dim = 128, small.ffn_hidden = 1024;
  LoraSpec lora = litgpt_default_lora();
  EXPECT_EQ(litgpt_lora_layer_saved_bytes(small, 128, lora), 2374144 - 128 * 512);
  lora.base = LoraBase::nf4;
  EXPECT_EQ(litgpt_lora_layer_saved_bytes(small, 128, lora), 3029504 - 128 * 512);
}

TEST(LitgptCensus, RefusedOutsideWhatWasCounted) {
  const auto build = [](const std::string& sets) {
    return load_scenario_file(
        std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/training/litgpt-lora-llama2-7b-a100.yaml", {sets});
  };
  test::expect_refused(build, {{"training.lora.target_modules=[q,k,v]", "training.lora.target_modules"},
                               {"training.lora.base_dtype=fp8", "training.lora.base_dtype"},
                               {"model.kv_heads=8", "model.kv_heads"}});
}

// MLPerf Training v5.0 Llama-2-70B LoRA, NVIDIA's closed run on one DGX B200 (8 GPUs, DP 8,
// sequences of 8192, fp8 base; scenarios/validation/training/mlperf50-llama2-70b-lora-b200.yaml):
// 1.541 s a step, max_memory_usage 168.827. That figure is GiB: mlperf_common's LoggingCallback
// (NVIDIA/mlperf-common mlperf_common/callbacks/logging.py, commit 53f892f, 2025-02-27, in the
// NGC 25.04 container the log names) logs round(torch.cuda.max_memory_allocated() / 1024**3, 3),
// 181.3e9 bytes. Read as 1e9-byte GB the prediction came out +17%; against the GiB it is +9.1%
// (184.2 GiB) when written, predicted not to fit in the B200's 179 GiB. With the config's FP8_ACT
// (plan.fp8_activation_input: -35 GiB) and config_common's FP8_DPA (plan.fp8_attention: -1.1 GiB
// beside the adapters' inputs kept in 16 bits, +5 GiB) it fits at 153.7 GiB, -9.0%. Not priced:
// LoRA's dropout (0.1, "pre") on the adapters' inputs, whose masks add (1 byte an element of the
// QKV and output projections' inputs: 10 GiB over 80 layers under PyTorch's dropout).
TEST(MlperfLora, StepTimeWithinFifteenPercentMemoryWithinTenPercent) {
  const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) +
                                        "/scenarios/validation/training/mlperf50-llama2-70b-lora-b200.yaml");
  const double step = predict_training(s).step_s;
  const double peak_GiB = static_cast<double>(predict_memory(s).peak_bytes) / (1 << 30);
  std::printf(
      "MLPerf v5.0 Llama-2-70B LoRA 8xB200: step %.3f s (published 1.541, %+.1f%%), peak %.1f GiB (168.8, %+.1f%%)\n",
      step, 100 * (step / 1.541 - 1), peak_GiB, 100 * (peak_GiB / 168.827 - 1));
  EXPECT_NEAR(step / 1.541, 1.0, 0.15);
  EXPECT_NEAR(peak_GiB / 168.827, 1.0, 0.10);
}

// A published LoRA run's step time: predicted within 15%, and the run fits.
void expect_step_within_fifteen_percent(const std::string& scenario, double published_s, const char* label) {
  const Scenario s = load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + scenario);
  const double step = predict_training(s).step_s;
  std::printf("%s: step %.3f s (published %.3f, %+.1f%%)\n", label, step, published_s, 100 * (step / published_s - 1));
  EXPECT_NEAR(step / published_s, 1.0, 0.15);
  EXPECT_TRUE(predict_memory(s).fits);
}

// NVIDIA's DGX Cloud Benchmarking recipe, Llama 3 70B LoRA on 8 GB200s (BF16, PP 4 VP 20, DP 2,
// sequences of 2048, adapters on q, k, v; scenarios/validation/training/dgxc-llama3-70b-lora-gb200.yaml):
// 4.225 s a step. Predicted 3.764 s (-10.9%) when written; all linear layers adapted instead
// (NeMo's non-performance default) 4.279 s: the target modules the recipe sets matter ~14%.
TEST(DgxcLora, StepTimeWithinFifteenPercent) {
  expect_step_within_fifteen_percent("/scenarios/validation/training/dgxc-llama3-70b-lora-gb200.yaml", 4.225,
                                     "DGXC Llama-3-70B LoRA 8xGB200");
}

// MLPerf Training v4.0 Llama-2-70B LoRA, HPE's closed run on one Cray XD670 (8 H100s, TP 4 SP
// with TE's userbuffers overlap, DP 2, sequences of 8192, fp8 base;
// scenarios/validation/training/mlperf40-llama2-70b-lora-hpe-h100.yaml): 3.855 s a step (median
// of its five logged block throughputs, 2.0751 samples/s at global batch 8). Predicted 3.748 s
// (-2.8%) when written.
TEST(MlperfLora, HpeH100StepTimeWithinFifteenPercent) {
  expect_step_within_fifteen_percent("/scenarios/validation/training/mlperf40-llama2-70b-lora-hpe-h100.yaml", 3.855,
                                     "MLPerf v4.0 Llama-2-70B LoRA 8xH100 (HPE)");
}

// MLPerf Training v4.1 Llama-2-70B LoRA, NVIDIA's closed run on one HGX H200 (CP 2, DP 4, sequences
// of 8192, fp8 base; scenarios/validation/training/mlperf41-llama2-70b-lora-h200.yaml): 3.237 s a step.
// Predicted 3.219 s (-0.6%) when written.
TEST(MlperfLora, H200ContextParallelStepTimeWithinFifteenPercent) {
  expect_step_within_fifteen_percent("/scenarios/validation/training/mlperf41-llama2-70b-lora-h200.yaml", 3.237,
                                     "MLPerf v4.1 Llama-2-70B LoRA 8xH200 CP2");
}

// The same plan on 8 B200s (the v4.1 preview run, mlperf41-llama2-70b-lora-b200.yaml): 1.705 s a step.
// It came out -18.0% while the B200's fp8 curve held XLA's batched 74% past 5.5e11 FLOPs; with the
// single B200 CUTLASS fp8 product past that range (57%, b200.yaml) -7.9% (v5.0's run: -11.0% -> +1.8%).
TEST(MlperfLora, B200PreviewContextParallelStepTimeWithinFifteenPercent) {
  expect_step_within_fifteen_percent("/scenarios/validation/training/mlperf41-llama2-70b-lora-b200.yaml", 1.705,
                                     "MLPerf v4.1 Llama-2-70B LoRA 8xB200 CP2");
}

}  // namespace
}  // namespace twinsim
