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

namespace twinsim {
namespace {

std::vector<std::vector<std::string>> aic_rows(const std::string& file, std::size_t columns) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file);
  EXPECT_TRUE(in) << file;
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    rows.push_back(split_csv_line(line));
    EXPECT_EQ(rows.back().size(), columns) << line;
  }
  return rows;
}

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
                      const std::string& weight_dtype, const std::string& kv_dtype) {
  const std::string node = gpu == "h100-sxm" ? "dgx-h100" : "dgx-h200";
  return load_scenario_text(
      "model: " + aic_model(model) + "\ncluster: {preset: " + node + ", gpus_per_node: " + std::to_string(tp) +
      ", nodes: 1}\ninference: {prompt_len: 1024, output_len: 2, batch: 1, weight_dtype: " + weight_dtype +
      ", kv_dtype: " + kv_dtype + "}\nplan: {tp: " + std::to_string(tp) + ", pp: 1}\nstack: " + aic_stack(engine) +
      "\n");
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
  for (const auto& c : aic_rows("decode_attention_aiconfigurator_h100_h200.csv", 10)) {
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
  for (const auto& c : aic_rows("gemm_decode_aiconfigurator_h100_h200.csv", 12)) {
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
  for (const auto& c : aic_rows("allreduce_custom_aiconfigurator_h100_h200.csv", 8)) {
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
  for (const auto& c : aic_rows("fused_moe_aiconfigurator_qwen3_235b.csv", 7)) {
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
