// A decode pass's components (the attention over the KV cache, the small-M linear layers, the
// TP all-reduce) as the serving cost model prices them (ServingCostModel::op_times, the call
// list_times_s the serving loop prices every pass with), against the engines' own kernels timed
// by ai-dynamo/aiconfigurator (Apache-2.0, commit 095f58a5, systems/data/{h100_sxm,h200_sxm}:
// vLLM 0.14.0, SGLang 0.5.6.post2, TensorRT-LLM 1.2.0rc5; CUDA-graph replays, mean of the runs;
// scenarios/validation/microbench/README.md). Each row is priced on the engine's judged stack
// (the scenarios under scenarios/validation/engines/) at the row's shape. Nothing is fitted
// here but vLLM's all-reduce points (stacks/vllm-v1.yaml, every other H100 size); the bounds hold
// today's errors (printed per table and regime) so that a change of a price shows. Measured
// 2026-12-07 (report s13/09): 16-bit GEMMs at M 1-16 median |e| 6-10%, fp8 GEMMs priced ~45-55%
// fast on vLLM and TensorRT-LLM; decode attention too fast on small calls, mixed on large ones.
// TensorRT-LLM 1.2.0rc5's attention rows were collected on a K-only cache (CacheType.SELFKONLY,
// aiconfigurator before dec5f4cd2): its large calls understate the time up to 2x (report s15/13;
// dense_decode_large_batch_test.cpp judges against 1.3.0rc20's full-layout rows instead).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "tests/unit/inference/microbench_rows.hpp"

namespace twinsim {
namespace {

// The judged engine scenarios' models (scenarios/validation/engines/*.yaml).
std::string aic_model(const std::string& name) {
  if (name == "llama3.1-8b") return "llama3-8b";
  if (name == "llama3-70b") return "llama3-70b";
  if (name == "llama3.2-3b")
    return "{preset: llama3.2-1b, layers: 28, hidden: 3072, heads: 24, head_dim: 128, kv_heads: 8, ffn_hidden: 8192}";
  if (name == "qwq-32b")
    return "{preset: qwen2.5-72b, layers: 64, hidden: 5120, heads: 40, kv_heads: 8, ffn_hidden: 27648}";
  ADD_FAILURE() << "unknown model " << name;
  return name;
}

// The engines' catalog stacks as they describe today's releases (the tables' versions): vLLM 0.14
// decodes with FA3's 64-row query tile and SGLang 0.5.6 with FA3 on Hopper (kernel_source
// flash_attention), so neither judged release's attention flags (vllm082-*: serving_decode_fa3_m128;
// sglang044-*: FlashInfer's CUDA-core decode) are set here.
std::string aic_stack(const std::string& engine) {
  if (engine == "vllm") return "vllm-v1";
  if (engine == "sglang") return "sglang";
  return "trtllm-v1";
}

Scenario aic_scenario(const std::string& model, const std::string& gpu, int tp, const std::string& engine,
                      const std::string& weight_dtype, const std::string& kv_dtype, const std::string& stack = "") {
  const std::string node = gpu == "h100-sxm" ? "dgx-h100" : "dgx-h200";
  return load_scenario_text(
      "model: " + aic_model(model) + "\ncluster: {preset: " + node + ", gpus_per_node: " + std::to_string(tp) +
      ", nodes: 1}\ninference: {prompt_len: 1024, output_len: 2, batch: 1, weight_dtype: " + weight_dtype +
      ", kv_dtype: " + kv_dtype + "}\nplan: {tp: " + std::to_string(tp) +
      ", pp: 1}\nstack: " + (stack.empty() ? aic_stack(engine) : stack) + "\n");
}

double aic_op_s(const Scenario& s, const IterationShape& shape, const std::string& op) {
  for (const PassOpTime& t : ServingCostModel(s).op_times(shape))
    if (t.name == op + ".fwd") return t.time_s;
  ADD_FAILURE() << "no op " << op;
  return 0;
}

struct AicError {
  std::string table, regime;
  double error = 0;  // predicted / measured - 1 (+: priced slower)
};

// Median and max |error|, and the median signed error, per table and regime.
void print_errors(const std::vector<AicError>& errors) {
  std::map<std::string, std::vector<double>> by;
  for (const AicError& e : errors) by[e.table + " | " + e.regime].push_back(e.error);
  for (auto& [key, v] : by) {
    std::vector<double> abs_v;
    for (double x : v) abs_v.push_back(std::abs(x));
    std::sort(v.begin(), v.end());
    std::sort(abs_v.begin(), abs_v.end());
    std::printf("%-48s n %3zu  median %+6.1f%%  median|e| %5.1f%%  max|e| %6.1f%%\n", key.c_str(), v.size(),
                100 * v[v.size() / 2], 100 * abs_v[abs_v.size() / 2], 100 * abs_v.back());
  }
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// heads, kv heads per GPU -> the judged model and TP that give them
std::pair<std::string, int> attention_model(int heads, int kv_heads) {
  if (heads == 32 && kv_heads == 8) return {"llama3.1-8b", 1};
  if (heads == 64 && kv_heads == 8) return {"llama3-70b", 1};
  return {"llama3-70b", 8};  // 8 heads, 1 KV head
}

TEST(DecodeComponentsAiconfigurator, DecodeAttention) {
  std::vector<AicError> errors;
  std::map<std::string, std::vector<double>> by_engine, small_calls;
  for (const auto& c : test::microbench_rows("decode_attention_aiconfigurator_h100_h200.csv", 10)) {
    const auto [model, tp] = attention_model(std::stoi(c[7]), std::stoi(c[8]));
    const Scenario s = aic_scenario(model, c[0], tp, c[1], "bf16", c[4]);
    const std::int64_t batch = std::stoll(c[5]), context = std::stoll(c[6]);
    const double predicted = aic_op_s(s, decode_shape(batch, context), "attn.core");
    const double error = predicted / (std::stod(c[9]) * 1e-6) - 1;
    const std::string regime = batch * context <= 32 * 1024 ? "KV <= 32K tokens" : "KV > 32K tokens";
    errors.push_back({"attn " + c[0] + " " + c[1] + " " + c[4], regime, error});
    by_engine[c[1]].push_back(std::abs(error));
    if (batch * context <= 32 * 1024) small_calls[c[1]].push_back(error);
  }
  ASSERT_EQ(errors.size(), 364u);
  print_errors(errors);
  for (auto& [engine, v] : by_engine) {
    std::printf("attention %s: median |error| %.1f%%\n", engine.c_str(), 100 * median_of(v));
    EXPECT_LT(median_of(v), 0.60) << engine;
  }
  // Today's state (2026-12-07): calls of up to 32K cached tokens priced too fast on every engine
  // (median -33..-70% by engine, GPU and cache type): the module's fixed time (13-14 us at batch 1
  // on vLLM and TensorRT-LLM, 24 us on SGLang, H100) against the kernel's 7 us priced
  // (kv_attention_latency fitted on cuDNN's kernel alone). Sized, not applied: call_us 7.75 on
  // the H100/H200 moves 77 serving rows toward their published figures and 86 away (report s13/09).
  for (auto& [engine, v] : small_calls) EXPECT_LT(median_of(v), -0.15) << engine;
}

TEST(DecodeComponentsAiconfigurator, SmallMGemm) {
  std::vector<AicError> errors;
  for (const auto& c : test::microbench_rows("gemm_decode_aiconfigurator_h100_h200.csv", 12)) {
    const int tp = std::stoi(c[6]);
    const std::int64_t m = std::stoll(c[8]), n = std::stoll(c[9]), k = std::stoll(c[10]);
    const Scenario s = aic_scenario(c[5], c[0], tp, c[1], c[4], "bf16");
    // the row's N, K are the op's in the judged model at that TP
    bool found = false;
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, decode_shape(m, 1024)))
      if (op.name == c[7]) found = op.n == n && op.k == k;
    EXPECT_TRUE(found) << c[5] << " " << c[7] << " " << n << "x" << k;
    const double predicted = aic_op_s(s, decode_shape(m, 1024), c[7]);
    const double error = predicted / (std::stod(c[11]) * 1e-6) - 1;
    const std::string regime = m <= 16 ? "M 1-16" : (m <= 128 ? "M 64-128" : "M 256-512");
    errors.push_back({"gemm " + c[0] + " " + c[1] + " " + c[4], regime, error});
  }
  ASSERT_EQ(errors.size(), 1008u);
  print_errors(errors);
  // Today's state (2026-12-07): 16-bit weights' streaming at M 1-16 within ~10% (median |e| 6-10%
  // per engine and GPU); fp8 (per-tensor W8A8) priced about half the measured time at every M on
  // vLLM and TensorRT-LLM: their fp8 small-M GEMMs stream the weights at about the 16-bit GEMM's
  // time (Llama 3.1 8B QKV, M 1, H100: vLLM 21.5 us fp8, 20.7 us bf16), not at twice its rate.
  std::vector<double> bf16_small, fp8_signed;
  for (const AicError& e : errors) {
    if (e.table.ends_with("bf16") && e.regime == "M 1-16") bf16_small.push_back(std::abs(e.error));
    if (e.table.ends_with("fp8") && e.table.find("sglang") == std::string::npos) fp8_signed.push_back(e.error);
  }
  EXPECT_LT(median_of(bf16_small), 0.12);
  EXPECT_LT(median_of(fp8_signed), -0.30);  // priced too fast: fails once fp8's price is fixed
}

// SGLang's fp8 linear as the collector times it (collector/sglang/collect_gemm.py, "fp8": one
// sgl_per_token_quant_fp8 kernel, then fp8_scaled_mm, replayed in a CUDA graph): two kernels,
// where the serving price is the GEMM's alone. At decode rows (M 1-128) the quantize moves a few
// hundred KB, so a kernel of its own costs about its fixed time: StackSpec::serving_fp8_input_cast
// prices it as one more kernel_launch (4 us on both GPUs) plus its bytes. Measured 2026-12-07
// (s15 report 05), measured - priced a call, median over the 60 rows a GPU: H200 +4.0 us (median
// |error| 28.9% bare, 6.1% with the cast), H100 +0.4 us (8.5% bare, 33.7% with the cast). The H100
// table is the odd one: its fp8 module runs faster than the H200's (median 12.6 against 15.1 us)
// where its bf16 linear is slower (22.7 against 17.1 us), as a slower HBM should give.
// The judged SGLang 0.4.4 (no torch.compile for Llama in simon-mo/R1-Benchmark's Justfile) runs a
// static scaled_fp8_quant before each cutlass_scaled_mm: the same two kernels.
TEST(DecodeComponentsAiconfigurator, SglangFp8LinearIsAQuantizeAndAGemm) {
  std::map<std::string, std::vector<double>> excess_us, bare, cast, fp8_us, bf16_us;
  std::map<std::string, double> launch_us;  // the GPU's kernel_launch_us (4 on both)
  for (const auto& c : test::microbench_rows("gemm_decode_aiconfigurator_h100_h200.csv", 12)) {
    const std::int64_t m = std::stoll(c[8]);
    if (c[1] != "sglang" || m > 128) continue;
    (c[4] == "fp8" ? fp8_us : bf16_us)[c[0]].push_back(std::stod(c[11]));
    if (c[4] != "fp8") continue;
    const int tp = std::stoi(c[6]);
    const Scenario s = aic_scenario(c[5], c[0], tp, c[1], "fp8", "bf16");
    const Scenario with_cast =
        aic_scenario(c[5], c[0], tp, c[1], "fp8", "bf16", "{preset: sglang, serving_fp8_input_cast: true}");
    launch_us[c[0]] = s.cluster.gpu.kernel_launch_s * 1e6;
    const double measured = std::stod(c[11]) * 1e-6;
    const double priced = aic_op_s(s, decode_shape(m, 1024), c[7]);
    excess_us[c[0]].push_back((measured - priced) * 1e6);
    bare[c[0]].push_back(std::abs(priced / measured - 1));
    cast[c[0]].push_back(std::abs(aic_op_s(with_cast, decode_shape(m, 1024), c[7]) / measured - 1));
  }
  for (const char* gpu : {"h100-sxm", "h200-sxm"}) {
    ASSERT_EQ(excess_us[gpu].size(), 60u) << gpu;  // 12 shapes x M 1, 4, 16, 64, 128
    std::printf(
        "sglang fp8 %s M<=128: measured - priced median %+.1f us; median |error| %.1f%% bare, %.1f%% with "
        "the cast; module median %.1f us fp8, %.1f us bf16\n",
        gpu, median_of(excess_us[gpu]), 100 * median_of(bare[gpu]), 100 * median_of(cast[gpu]), median_of(fp8_us[gpu]),
        median_of(bf16_us[gpu]));
  }
  // H200 (the judges' GPU): the excess is about one more kernel, and pricing the cast fixes the rows
  EXPECT_GT(median_of(excess_us["h200-sxm"]), 0.5 * launch_us["h200-sxm"]);
  EXPECT_LT(median_of(excess_us["h200-sxm"]), 1.5 * launch_us["h200-sxm"]);
  EXPECT_LT(median_of(cast["h200-sxm"]), 0.5 * median_of(bare["h200-sxm"]));
  // H100: no excess, and the cast would price the module slow; its fp8 module is faster than the
  // H200's while its bf16 linear is slower (fails once either table is re-collected consistently)
  EXPECT_LT(median_of(excess_us["h100-sxm"]), 0.25 * launch_us["h100-sxm"]);
  EXPECT_GT(median_of(cast["h100-sxm"]), median_of(bare["h100-sxm"]));
  EXPECT_LT(median_of(fp8_us["h100-sxm"]), median_of(fp8_us["h200-sxm"]));
  EXPECT_GT(median_of(bf16_us["h100-sxm"]), median_of(bf16_us["h200-sxm"]));
}

// The judged releases' decode-attention stacks (scenarios/validation/engines/{vllm082,sglang044}-*):
// vLLM 0.8.2 ran FA3's 128-row query tile, SGLang 0.4.4 FlashInfer's CUDA-core decode.
std::string judged_decode_stack(const std::string& engine) {
  if (engine == "vllm") return "{preset: vllm-v1, serving_decode_fa3_m128: true}";
  return "{preset: sglang, serving_decode_cuda_core_group: 4, serving_prefix_attention_fa2: true}";
}

// Decode attention at the judged Llama models' groups (3.1 8B: 32/8 heads, 3.2 3B: 24/8), batch
// 16-128, 1K-16K cached tokens, H200, bf16 and fp8 cache: vLLM 0.14.1's FLASH_ATTN module (FA3; a
// decode's <= 64 packed query rows run the one-warpgroup 64-row tile, vllm-project/flash-attention
// PR #63, 2025-04-18) and SGLang 0.5.6's FA3 backend, each priced on today's stack and on the
// judged release's. Measured 2026-12-07 (s15 report 11), calls of > 32K cached tokens, bf16 cache:
// vLLM on today's vllm-v1 (kv_cache_attention 0.90) median -3.3% (32/8) and -3.5% (24/8), on the
// judged 0.8.2 stack (the 128-row tile, kv_attention_fa3_m128_efficiency 0.569, fitted on an H100
// MHA call) +50.4% and +50.1%. The two tiles are different kernels, so the table does not price
// 0.8.2: its judges say so too (with the 64-row price every vllm082 TPOT turns 12-23% fast, the
// bf16 QwQ-32B ones included, which no fp8 term touches). 24 and 32 query heads on the same 8 KV
// heads run in the same time: the call is bound by its K,V bytes, not by its query rows.
TEST(DecodeComponentsAiconfigurator, DecodeAttentionAtTheJudgedGroupsOnH200) {
  std::vector<AicError> errors;
  std::map<std::string, double> measured_us;  // "engine kv batch context heads" -> us
  for (const auto& c : test::microbench_rows("decode_attention_gqa_aiconfigurator_h200.csv", 10)) {
    const std::string model = c[7] == "32" ? "llama3.1-8b" : "llama3.2-3b";
    const std::int64_t batch = std::stoll(c[5]), context = std::stoll(c[6]);
    const double measured = std::stod(c[9]) * 1e-6;
    if (c[1] == "vllm") measured_us[c[1] + " " + c[4] + " " + c[5] + " " + c[6] + " " + c[7]] = std::stod(c[9]);
    const Scenario today = aic_scenario(model, c[0], 1, c[1], "bf16", c[4]);
    const Scenario judged = aic_scenario(model, c[0], 1, c[1], "bf16", c[4], judged_decode_stack(c[1]));
    const double e_today = aic_op_s(today, decode_shape(batch, context), "attn.core") / measured - 1;
    const double e_judged = aic_op_s(judged, decode_shape(batch, context), "attn.core") / measured - 1;
    const std::string table = c[1] + " " + c[7] + "/" + c[8] + " " + c[4];
    const std::string regime = batch * context <= 32 * 1024 ? "KV <= 32K" : "KV > 32K";
    errors.push_back({table + " today", regime, e_today});
    errors.push_back({table + " judged", regime, e_judged});
    std::printf("%-22s b %3lld ctx %5lld: measured %6.1f us, today %+6.1f%%, judged stack %+6.1f%%\n", table.c_str(),
                static_cast<long long>(batch), static_cast<long long>(context), measured * 1e6, 100 * e_today,
                100 * e_judged);
  }
  ASSERT_EQ(errors.size(), 2 * 86u);  // vLLM 2 groups x 2 caches x 14, SGLang 32/8 x 2 caches x 15
  print_errors(errors);
  std::map<std::string, std::vector<double>> large;
  for (const AicError& e : errors)
    if (e.regime == "KV > 32K") large[e.table].push_back(e.error);
  for (const char* group : {"32/8", "24/8"}) {
    const std::string t = std::string("vllm ") + group + " bf16";
    EXPECT_LT(std::abs(median_of(large[t + " today"])), 0.06) << t;  // the 64-row tile's bytes at 0.90
    EXPECT_GT(median_of(large[t + " judged"]), 0.40) << t;           // the 128-row tile priced ~1.5x the 64-row one
  }
  std::vector<double> group_ratio;  // 24/8 against 32/8 at the same vLLM batch, context and cache
  for (const auto& [key, us] : measured_us)
    if (key.ends_with(" 24") && measured_us.contains(key.substr(0, key.size() - 2) + "32"))
      group_ratio.push_back(std::abs(us / measured_us.at(key.substr(0, key.size() - 2) + "32") - 1));
  ASSERT_EQ(group_ratio.size(), 28u);
  std::printf("vllm 24/8 against 32/8 heads: median |difference| %.1f%%\n", 100 * median_of(group_ratio));
  EXPECT_LT(median_of(group_ratio), 0.03);
}

// vLLM's custom all-reduce: stacks/vllm-v1.yaml serving_tp_allreduce_us holds the H100's rows at
// every other size (4K, 16K, ... 4M elements: FITTED); the sizes between (8K, 32K, ... 2M) and
// every H200 row are held out. TensorRT-LLM's rows are priced by NCCL (trtllm-v1 has no points:
// judged away on the Llama 3.3 70B TP-2 rows, report s13/09).
bool fitted_allreduce_row(const std::vector<std::string>& c) {
  const std::int64_t elements = std::stoll(c[6]);
  const bool even_power =
      (std::countr_zero(static_cast<std::uint64_t>(elements)) % 2) == 0;  // 2^12, 2^14 ... 2^22: the fitted sizes
  return c[0] == "h100-sxm" && c[1] == "vllm" && even_power;
}

TEST(DecodeComponentsAiconfigurator, CustomAllReduce) {
  std::vector<AicError> errors;
  std::vector<double> vllm_held_out, vllm_small_held_out, trtllm_small;
  for (const auto& c : test::microbench_rows("allreduce_custom_aiconfigurator_h100_h200.csv", 8)) {
    const int gpus = std::stoi(c[5]);
    const std::int64_t elements = std::stoll(c[6]);
    // Llama 3.1 8B's 4,096-wide hidden state: elements / 4096 decode tokens, 16-bit
    const Scenario s = aic_scenario("llama3.1-8b", c[0], gpus, c[1], "bf16", "bf16");
    const double predicted = aic_op_s(s, decode_shape(elements / 4096, 1024), "attn.tp_exit");
    const double error = predicted / (std::stod(c[7]) * 1e-6) - 1;
    const std::string regime = elements <= 65536 ? "<= 128 KB" : "> 128 KB";
    const bool fitted = fitted_allreduce_row(c);
    errors.push_back({"allreduce " + c[0] + " " + c[1] + " tp" + c[5] + (fitted ? " fitted" : ""), regime, error});
    if (fitted) {  // its own point
      EXPECT_LT(std::abs(error), 0.01) << c[0] << " " << c[5] << " " << elements;
    } else if (c[1] == "vllm") {
      vllm_held_out.push_back(std::abs(error));
    }
    if (!fitted && c[1] == "vllm" && elements <= 65536) vllm_small_held_out.push_back(std::abs(error));
    if (c[1] == "trtllm" && elements <= 65536) trtllm_small.push_back(error);
  }
  ASSERT_EQ(errors.size(), 132u);
  ASSERT_EQ(vllm_held_out.size(), 48u);  // 15 H100 sizes between + 33 H200 rows
  print_errors(errors);
  std::printf("vLLM held out: median |error| %.1f%%, max %.1f%%\n", 100 * median_of(vllm_held_out),
              100 * *std::max_element(vllm_held_out.begin(), vllm_held_out.end()));
  // Measured 2026-12-07: held out median 4.7%, max 5.7% up to 128 KB (a decode pass's sizes up to
  // 16 tokens of a 4,096 hidden state), max 58.5% above (H200, 8 GPUs, 256 KB-2 MB: where the
  // kernel changes from one-shot to two-shot, between the fitted points)
  EXPECT_LT(median_of(vllm_held_out), 0.10);
  EXPECT_LT(*std::max_element(vllm_small_held_out.begin(), vllm_small_held_out.end()), 0.10);
  EXPECT_LT(*std::max_element(vllm_held_out.begin(), vllm_held_out.end()), 0.65);
  // NCCL's price (the node's measured_busbw) for TensorRT-LLM's kernel: 3-10x its 3.5-10 us at
  // up to 128 KB. Fails once trtllm-v1 prices its own kernel.
  EXPECT_GT(median_of(trtllm_small), 1.5);
}

// Print only: TensorRT-LLM 1.2.0rc5's CUTLASS fused MoE at Qwen3-235B-A22B's experts (128 x 4096 x
// 1536, top 8, EP 8 / TP 1, balanced routing; the table's num_tokens) against the routed experts'
// ops of a decode pass of as many tokens on the judged EP-8 scenario (for the Qwen3-235B work).
TEST(DecodeComponentsAiconfigurator, Qwen3MoeAtEp8PrintOnly) {
  int printed = 0;
  for (const auto& c : test::microbench_rows("fused_moe_aiconfigurator_qwen3_235b.csv", 7)) {
    const std::string node = c[0] == "h100-sxm" ? "8xh100" : "8xh200";
    const Scenario s =
        load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/engines/trtllm1-qwen3-235b-a22b-" +
                           node + "-fp8.yaml");
    const std::int64_t tokens = std::stoll(c[5]);
    double predicted = 0;
    for (const PassOpTime& op : ServingCostModel(s).op_times(decode_shape(tokens, 1024)))
      if (op.name.rfind("moe.experts.", 0) == 0) predicted += op.time_s;
    const double measured = std::stod(c[6]) * 1e-6;
    std::printf("qwen3-235b moe %s %-9s %5lld tokens: measured %7.1f us, priced %7.1f us (%+.0f%%)\n", c[0].c_str(),
                c[4].c_str(), static_cast<long long>(tokens), measured * 1e6, predicted * 1e6,
                100 * (predicted / measured - 1));
    ++printed;
  }
  EXPECT_EQ(printed, 44);
}

}  // namespace
}  // namespace twinsim
