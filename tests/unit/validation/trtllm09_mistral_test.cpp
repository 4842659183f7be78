// Issue 56 (s14): the TensorRT-LLM v0.9.0 page's Mistral 7B rows outside 15%
// (scenarios/validation/inference/trtllm09-mistral-7b-{h100,h200}-fp8.yaml; cases.csv
// trtllm09-mistral-*), set against the same page's LLaMA 7B rows. The page (NVIDIA/TensorRT-LLM
// docs/source/performance.md at v0.9.0, "All data was generated using version 0.9.0") runs
// LLaMA 7B (Llama-2-7b: 32 KV heads, FFN 11,008) at the same batches and lengths as Mistral 7B
// (8 KV heads, FFN 14,336, sliding window 4,096), on the same GPUs and in the same FP8 with an FP8
// KV cache. The two differ in one thing that matters for decode: Mistral's 4 query heads a KV head
// run the masked-MHA kernel (XQA only for 8 a KV head in 0.9, and opt-in by TRTLLM_ENABLE_XQA=1,
// which the page's recipes set only for Llama-2 70B and Falcon 180B), so a decode step reads the
// same K,V bytes as LLaMA's MHA, 4 times a 4x smaller cache. The simulator prices the repeats at
// the HBM rate (stacks/trtllm.yaml serving_decode_shared_kv_group), which makes Mistral and LLaMA
// cost the same a step. The page's LLaMA 7B FP8 rows are held-out judges of their own in cases.csv
// (trtllm09-llama2-7b-*); they are the contrast here, nothing fitted to them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {
namespace {

const std::string kRoot = TWINSIM_SOURCE_DIR;

// The Mistral scenario file of a GPU ("h100" / "h200").
std::string mistral_file(const std::string& gpu) {
  return kRoot + "/scenarios/validation/inference/trtllm09-mistral-7b-" + gpu + "-fp8.yaml";
}

// The same file as the page's LLaMA 7B (Llama-2-7b, the preset the Mistral model overrides).
const std::vector<std::string> kAsLlama7b = {"model.kv_heads=32", "model.ffn_hidden=11008", "model.sliding_window=0"};

InferencePrediction predict(const std::string& gpu, std::vector<std::string> overrides,
                            const std::vector<std::string>& extra) {
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return predict_inference(load_scenario_file(mistral_file(gpu), overrides));
}

std::vector<std::string> shape(int batch, int prompt, int output) {
  return {"inference.batch=" + std::to_string(batch), "inference.prompt_len=" + std::to_string(prompt),
          "inference.output_len=" + std::to_string(output)};
}

// A cases.csv row's published figure.
double published(const std::string& name) {
  static const auto cases = trust::read_validation_cases(kRoot + "/scenarios/validation/cases.csv");
  const auto c = std::find_if(cases.begin(), cases.end(), [&](const auto& v) { return v.name == name; });
  if (c == cases.end()) throw std::runtime_error(name + " is not in cases.csv");
  return c->measured;
}

// Two decode-heavy rows a GPU: the page's "Peak Throughput" tables (out tok/s/GPU), H100 / H200
// GPUs (FP8), both models' rows in cases.csv.
struct DecodeRow {
  const char* gpu;
  int batch, prompt, output;
  const char* mistral_case;  // cases.csv
  const char* llama_case;    // cases.csv: the page's LLaMA 7B row
};
const DecodeRow kDecodeRows[] = {
    {"h100", 120, 128, 2048, "trtllm09-mistral-7b-h100-fp8-bs120-128-2048",
     "trtllm09-llama2-7b-h100-fp8-bs120-128-2048"},
    {"h100", 56, 2048, 2048, "trtllm09-mistral-7b-h100-fp8-bs56-2048-2048",
     "trtllm09-llama2-7b-h100-fp8-bs56-2048-2048"},
    {"h200", 120, 128, 2048, "trtllm09-mistral-7b-h200-fp8-bs120-128-2048",
     "trtllm09-llama2-7b-h200-fp8-bs120-128-2048"},
    {"h200", 56, 2048, 2048, "trtllm09-mistral-7b-h200-fp8-bs56-2048-2048",
     "trtllm09-llama2-7b-h200-fp8-bs56-2048-2048"},
};

// What the page shows and the simulator does not: Mistral's GQA gains 24-32% over LLaMA's MHA on
// the H100 and 7-10% on the H200, where the simulator's Mistral and LLaMA are within 2% of each
// other on both. LLaMA's rows are priced right on the H100 (-1.6%, +0.4%) and 7-11% fast on the
// H200: the MHA decode is HBM-bound and priced so. Mistral's is not: the published step, less the
// simulator's non-attention ops (4.4 ms on the H100, 3.55 on the H200) and its prefill (1.73 /
// 1.69 s), leaves 9.8 ms of attention on the H100 and 10.1 on the H200 at bs56 2048/2048. That is
// 45 GB of K,V reads counting the 4 repeats (4.5 TB/s) and 11.3 GB counting each once (1.1 TB/s):
// a bound of the masked-MHA kernel itself, the same on both GPUs, not of HBM (where LLaMA's MHA
// runs at 91% / 80% of the datasheet rate) and not of L2 (9.7-10.1 TB/s measured on an H200,
// stacks/trtllm.yaml). Sizing, not kept: attention = max(one read at HBM, 4 reads / R) with R the
// 4.5 TB/s above would bring both GPUs' rows within ~5%, but R would be fitted on these end-to-end
// rows; no measurement of 0.9's masked-MHA kernel was found (TensorRT-LLM issue #1570 asks this
// very question of the page and has no maintainer answer). The test holds the finding: it fails
// when the simulator starts telling GQA-4 from MHA under this stack, or the Mistral rows change.
TEST(Trtllm09Mistral, GqaGainOverLlama7bIsNotPricedOnTheH100) {
  for (const DecodeRow& r : kDecodeRows) {
    const auto rows = shape(r.batch, r.prompt, r.output);
    const double mistral = predict(r.gpu, {}, rows).output_tokens_per_s;
    const double llama = predict(r.gpu, kAsLlama7b, rows).output_tokens_per_s;
    const double mistral_pub = published(r.mistral_case), llama_pub = published(r.llama_case);
    std::printf("  %s bs%d %d/%d: Mistral/LLaMA published %.2f predicted %.2f; LLaMA %+.1f%%, Mistral %+.1f%%\n", r.gpu,
                r.batch, r.prompt, r.output, mistral_pub / llama_pub, mistral / llama, 100 * (llama / llama_pub - 1),
                100 * (mistral / mistral_pub - 1));
    EXPECT_NEAR(mistral / llama, 1.0, 0.03) << r.mistral_case;  // the repeats at HBM: ~LLaMA's bytes
    EXPECT_LT(std::abs(llama / llama_pub - 1), 0.15) << r.gpu;  // MHA decode priced within 15%
    if (std::string(r.gpu) == "h100") {
      EXPECT_GT(mistral_pub / llama_pub, 1.2) << r.mistral_case;  // the page's GQA gain on the H100
    } else {
      EXPECT_LT(mistral_pub / llama_pub, 1.12) << r.mistral_case;  // and on the H200
    }
  }
}

// Mistral 7B v0.1's sliding window (4,096; TensorRT-LLM 0.9 keeps a cyclic KV cache of
// max_attention_window = 4,096) never binds on the page: its longest rows reach 2,048 + 2,048 =
// 4,096 tokens. Dropping the window leaves every row's prediction unchanged.
TEST(Trtllm09Mistral, SlidingWindowDoesNotReachThePagesLengths) {
  for (const DecodeRow& r : kDecodeRows) {
    const auto rows = shape(r.batch, r.prompt, r.output);
    EXPECT_DOUBLE_EQ(predict(r.gpu, {}, rows).output_tokens_per_s,
                     predict(r.gpu, {"model.sliding_window=0"}, rows).output_tokens_per_s)
        << r.mistral_case;
  }
}

// The page's "Low Latency" tables (1st token latency, batch 1, ms; gptSessionBenchmark with one
// output token: one context pass and its host work, report s13/08): H200 / H100 (FP8), A100
// (FP16). Mistral 7B 5.9 / 6.5 / 16.3 at 128 tokens, 31.7 / 32.4 / 139.6 at 2,048; LLaMA 7B
// 5.7 / 6.3 / 16.2 and 30.2 / 30.8 / 132.4.
struct TtftRow {
  const char* gpu;
  bool llama;
  double published_128_ms, published_2048_ms;
};
const TtftRow kTtftRows[] = {
    {"h200", false, 5.9, 31.7}, {"h100", false, 6.5, 32.4}, {"a100", false, 16.3, 139.6},
    {"h200", true, 5.7, 30.2},  {"h100", true, 6.3, 30.8},  {"a100", true, 16.2, 132.4},
};

double predicted_ttft_ms(const TtftRow& r, int prompt) {
  std::vector<std::string> o = r.llama ? kAsLlama7b : std::vector<std::string>{};
  if (std::string(r.gpu) == "a100")  // the A100 table: FP16 weights and cache, on the H100 file
    o.insert(o.end(), {"cluster.preset=dgx-a100-80gb", "inference.weight_dtype=fp16", "inference.kv_dtype=fp16"});
  const std::string gpu = std::string(r.gpu) == "a100" ? "h100" : r.gpu;
  return 1e3 * predict(gpu, o, shape(1, prompt, 1)).ttft_s;
}

// The TTFT-128 rows (Mistral H200 -38.6%, H100 -30.3%, predicted too short) against the page's
// other dense 7B and its other GPU: the time the simulator misses at 128 tokens is 2.0-2.3 ms on
// both Hopper GPUs for both models (the HBM rates differ 1.43x: not bandwidth), 5.4-6.3 ms on the
// A100, while every 2,048-token row is within 6%. One host time per generate() (the s13 candidate)
// would have to be 2.7x longer on the DGX A100 and would add 6-7% to every TTFT-2048 row. What
// scales with the GPU's compute, not its HBM, is the 128-row GEMMs' rate: a 128 x 128 output tile
// gives N / 128 tiles, 32 for the 4,096-wide o-proj and down GEMMs and 48 for QKV, on 132 (108)
// SMs. ai-dynamo/aiconfigurator's tables (@095f58a5, h100_sxm/gemm/trtllm/1.2.0rc5) time the
// 4,096 x 4,096 GEMM at M = 128 on an H100 at 13.0 us (fp8_block), 17.6 (bf16) and 22.3 (fp8 with
// its activation quantize) where its 16.8 MB fp8 weight read takes 5.0 us at 3.35 TB/s, and
// the simulator prices 10.6 us. But the same tables run 1.17-1.37x the simulator's price at
// M = 2,048 (4,096 x 4,096: 75-91 us against 64.4), where the page's TTFT-2048 rows fit: they
// time TensorRT-LLM 1.2's kernels, not 0.9's TensorRT-native FP8 GEMMs (the page's engines use no
// GEMM plugin, --strongly_typed), so nothing is priced from them. Held here until a 0.9 figure.
// Sizing, not applied: the 128-token pass with its GEMMs at the 16-bit time (the small-M fp8 rate
// DecodeComponentsAiconfigurator.SmallMGemm holds at every M on vLLM and TensorRT-LLM 1.2) is
// 6.98 ms on the H100 (+7%) and 5.56 on the H200 (-6%), but that time is bandwidth-bound and the
// gap is not, and the same rate at the decode steps' M 56-120 takes the H200 throughput rows from
// -3.5..+4% to -16..-10% (bs56 2048/2048 3,235 tok/s, bs120 128/2048 8,027).
// Issue 56, s15. (1) A third architecture on the same page, GPT-J 6B (28 layers, MHA, GELU,
// parallel residual; no catalog model, so no judge): TTFT-128 5.0 ms (H200) and 5.5 (H100). Less
// one fp8 weight read at the datasheet HBM peak (parameters x 1 B: GPT-J 6.05 GB, LLaMA 6.74,
// Mistral 7.24) the pages leave 3.74 / 3.69 ms for GPT-J, 4.30 / 4.29 for LLaMA and 4.39 / 4.34
// for Mistral: 133, 134 and 136 us a layer on both Hopper GPUs, whatever the attention and MLP;
// on the A100 (FP16) 317, 300 and 287 us a layer. (2) Part of the A100's larger gap is its
// 16-bit small-M GEMMs: TensorRT-LLM 1.0.0's measured A100 bf16 GEMMs (aiconfigurator @095f58a5,
// a100_sxm/gemm/trtllm/1.0.0; QKV 12288 x 4096 80.8 us and o-proj 37.3 us at M = 128, gate-up
// and down scaled from the 16384 x 4096 and 4096 x 10240/12288 rows) sum to 10.90 ms over LLaMA
// 7B's 32 layers at 128 tokens against the simulator's 8.30 (1.31x), and to 102.9 ms against
// 112.1 at 2,048 (0.92x). Taking them leaves 3.7 ms of LLaMA's A100 gap (1.7-1.9x the Hopper
// gap, still not one time per generate()) and moves its TTFT-2048 from -2.1% to about -9%: not
// applied. (3) What the rows ran (the page's "Reproducing First Token Latency" and its Llama2-7b
// recipe): gptSessionBenchmark --input_output_len 128,1 on the throughput engine (one build,
// --max_batch_size 64 --max_input_len 2048, no GEMM plugin, --strongly_typed, one TensorRT
// optimisation profile: multiple_profiles off and opt_num_tokens = max_batch x beam = 64 by
// default, tensorrt_llm/commands/build.py and plugin/plugin.py at 0.10.0.dev, fork
// WhiteD2125/TensorRT-LLM@6ad7cf1b), without --enable_cuda_graph (and with one output token no
// generation step runs to capture). The recipe's loop lists batch 64 and 32 ("64:128,1",
// "32:2048,1") where the table says 1; only batch 1 fits the figures (64 prompts of 128 tokens
// are 8,192 tokens, four times the 2,048-token row's pass, published at 30.8 ms on the H100).
// Issue 56, s16, what the figure holds (gptSessionBenchmark.cpp, gptSession.cpp, tllmRuntime.cpp as
// stored from the fork WhiteD2125/TensorRT-LLM@6ad7cf1b): the host's wall time of one generate()
// and a stream sync, with no batch manager (no polling loop) and no CUDA graph (cudaGraphMode off;
// graphs replay generation steps only). The engine has one optimisation profile, so the context
// step and the generation step share one execution context: each generate()'s context step
// follows the previous one's generation shapes, and TllmRuntime::setInputTensors sets every input
// shape (with --paged_kv_cache disable, a past_key_value input a layer) and calls inferShapes with
// the GPU idle, before the enqueue. The first token's generation step sets its shapes on the same
// context before shouldStopSync, while the context pass runs. The page's H100 - H200 TTFT-128 gap
// is the whole FP8 weight read's at the datasheet rates (GPT-J 0.5 ms vs 0.55, LLaMA 0.6 vs
// 0.61, Mistral 0.6 vs 0.65): the missing time adds to the read, it does not hide it, as an
// enqueue slower than the GPU would (then both GPUs would take the host's time). The serial host
// block above fits that, but no published time of TensorRT 9's inferShapes or enqueue per layer
// was found (TensorRT and TensorRT-LLM issues searched), and a time per generate() also adds to
// the 2,048-token rows (the last check below): recorded, not priced.
TEST(Trtllm09Mistral, Ttft128GapScalesWithComputeNotHbmOrOneHostTime) {
  double hopper_max_gap = 0, a100_min_gap = 1e9;
  for (const TtftRow& r : kTtftRows) {
    const double p128 = predicted_ttft_ms(r, 128), p2048 = predicted_ttft_ms(r, 2048);
    const double gap = r.published_128_ms - p128;
    std::printf("  %s %-7s TTFT-128 published %5.1f predicted %5.2f ms (gap %.2f); TTFT-2048 %+5.1f%%\n", r.gpu,
                r.llama ? "LLaMA" : "Mistral", r.published_128_ms, p128, gap, 100 * (p2048 / r.published_2048_ms - 1));
    EXPECT_LT(std::abs(p2048 / r.published_2048_ms - 1), 0.10) << r.gpu;  // the 2,048-token pass fits
    if (std::string(r.gpu) == "a100") {
      a100_min_gap = std::min(a100_min_gap, gap);
    } else {
      EXPECT_GT(gap, 1.7) << r.gpu;  // one gap on both Hopper GPUs (HBM 3.35 vs 4.8 TB/s)
      EXPECT_LT(gap, 2.6) << r.gpu;
      hopper_max_gap = std::max(hopper_max_gap, gap);
    }
  }
  EXPECT_GT(a100_min_gap, 2 * hopper_max_gap);  // not one host time per generate()
}

// Issue 56, s16: the page's "Peak Throughput" rows at batch 896, 128/128 (LLaMA 7B -17% / -18%
// on the H100 / H200, Mistral 7B -6% / +6%). The page runs the two models at the same speed there
// (Mistral / LLaMA 1.03 and 0.99), the simulator 1.16 and 1.29 apart. The split is the GPU's
// decode-attention floor (kv_attention_latency: 26 ns a (sequence, KV head) item, h100-sxm.yaml
// and h200-sxm.yaml, fitted on PyTorch SDPA's cuDNN decode kernel): LLaMA's 896 x 32 items make
// a layer's attention 0.745 ms on both GPUs, where its K,V bytes take 0.31-0.62 ms (H100, 129-255 cached tokens) at the
// kernel's 0.9 of HBM; Mistral's 896 x 8 items sit under its bytes. TensorRT-LLM 0.9's decode
// kernel is not cuDNN's: the masked MHA kernel runs one thread block a (sequence, query head)
// (stacks/trtllm.yaml serving_decode_shared_kv_group), and no timing of it was found (#1570).
// Sized with the floor off (the trtllm stack's rows, trust table 2026-12-07): LLaMA bs896
// -16.9 -> -1.4% (H100) and -18.2 -> +8.1% (H200), the two models' ratio 0.98 / 0.97 as the
// page's; the H200 bs120 128/2048 row +11.1 -> +12.5%; and the v0.5 page's H100 batch-64 row
// (trtllm-llama2-7b-h100-fp8-bs64.yaml) -0.6 -> +9.0%: 2 rows toward, 3 away, not applied. The
// floor counted a (sequence, query head) instead (the masked kernel's blocks) brings the ratio to
// ~1 too, by slowing Mistral's bs896 rows to -21% / -19% (1 row toward, 7 away): not applied
// either. What the rows need is the masked MHA kernel's own time per block.
TEST(Trtllm09Mistral, Bs896SplitFromLlamaIsTheCudnnItemFloor) {
  const auto rows = shape(896, 128, 128);
  for (const std::string gpu : {"h100", "h200"}) {
    const auto throughput = [&](const std::vector<std::string>& model, bool floor) {
      std::vector<std::string> o = model;
      o.insert(o.end(), rows.begin(), rows.end());
      Scenario s = load_scenario_file(mistral_file(gpu), o);
      if (!floor) s.cluster.gpu.kv_attention_latency.item_s = 0;
      return predict_inference(s).output_tokens_per_s;
    };
    const double llama_pub = published("trtllm09-llama2-7b-" + gpu + "-fp8-bs896-128-128");
    const double page_ratio = published("trtllm09-mistral-7b-" + gpu + "-fp8-bs896-128-128") / llama_pub;
    const double with_floor = throughput({}, true) / throughput(kAsLlama7b, true);
    const double llama_no_floor = throughput(kAsLlama7b, false);
    const double without_floor = throughput({}, false) / llama_no_floor;
    std::printf(
        "  %s bs896 128/128 Mistral/LLaMA: page %.2f, predicted %.2f (floor) %.2f (no floor); LLaMA %+.1f%% "
        "without the floor\n",
        gpu.c_str(), page_ratio, with_floor, without_floor, 100 * (llama_no_floor / llama_pub - 1));
    EXPECT_NEAR(page_ratio, 1.0, 0.05) << gpu;            // the page: one speed for both models
    EXPECT_GT(with_floor, 1.10) << gpu;                   // the floor splits them
    EXPECT_NEAR(without_floor, page_ratio, 0.06) << gpu;  // and is all of the split
    EXPECT_LT(std::abs(llama_no_floor / llama_pub - 1), 0.10) << gpu;
  }
  // the cost of taking it off: the v0.5 page's H100 batch-64 LLaMA row (cases.csv) goes past +6%
  const std::string bs64 = kRoot + "/scenarios/validation/inference/trtllm-llama2-7b-h100-fp8-bs64.yaml";
  Scenario s = load_scenario_file(bs64, {});
  const double bs64_pub = published("trtllm-llama2-7b-h100-fp8-bs64");
  const double floor_on = predict_inference(s).output_tokens_per_s / bs64_pub - 1;
  s.cluster.gpu.kv_attention_latency.item_s = 0;
  const double floor_off = predict_inference(s).output_tokens_per_s / bs64_pub - 1;
  std::printf("  h100 bs64 128/128 (v0.5 page) LLaMA %+.1f%% with the floor, %+.1f%% without\n", 100 * floor_on,
              100 * floor_off);
  EXPECT_LT(std::abs(floor_on), 0.03);
  EXPECT_GT(floor_off, 0.06);
}

}  // namespace
}  // namespace twinsim
