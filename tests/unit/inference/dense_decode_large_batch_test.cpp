// The dense TensorRT-LLM 1.0 judges' decode pass (Llama 3.1 8B on one H100/H200, Llama 3.3 70B on
// one H200 and on 2 x H100) at the batches the offline runs reach and the CUDA-graph sizes they
// would be padded to (256-2,048 rows), op by op as the serving loop prices it
// (ServingCostModel::op_times on the judges' stack trtllm-v1, fp8 weights and KV), against
// TensorRT-LLM 1.2.0rc5's own kernels timed by ai-dynamo/aiconfigurator (Apache-2.0, commit
// 095f58a5, systems/data/{h100_sxm,h200_sxm}/{gemm,attention,comm}/trtllm/1.2.0rc5; CUDA-graph
// replays, mean of the runs; scenarios/validation/microbench/README.md). Judged, nothing fitted.
// The judges run 1.0: no table of that version exists, so every finding carries the version gap.
#include <gtest/gtest.h>

#include <algorithm>
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

// One GPU (or a TP group) of the judged scenarios (scenarios/validation/engines/trtllm1-llama*.yaml):
// fp8 weights and KV cache on the trtllm-v1 stack; ffn_hidden set where a row stands for a grid
// neighbour of the model's MLP width.
Scenario judged_dense(const std::string& model, std::int64_t ffn_hidden, const std::string& gpu, int tp) {
  const std::string preset = model == "llama3.1-8b" ? "llama3-8b" : "llama3-70b";
  const std::string node = gpu == "h100-sxm" ? "dgx-h100" : "dgx-h200";
  return load_scenario_text("model: {preset: " + preset + ", ffn_hidden: " + std::to_string(ffn_hidden) +
                            "}\ncluster: {preset: " + node + ", gpus_per_node: " + std::to_string(tp) +
                            ", nodes: 1}\ninference: {prompt_len: 1024, output_len: 2, batch: 1, weight_dtype: fp8, "
                            "kv_dtype: fp8}\nplan: {tp: " +
                            std::to_string(tp) + ", pp: 1}\nstack: trtllm-v1\n");
}

double priced_op_s(const Scenario& s, const IterationShape& shape, const std::string& op) {
  for (const PassOpTime& t : ServingCostModel(s).op_times(shape))
    if (t.name == op + ".fwd") return t.time_s;
  ADD_FAILURE() << "no op " << op;
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// predicted / measured - 1 (+: priced slower than the engine's kernel), by a key
using ErrorsBy = std::map<std::string, std::vector<double>>;

void print_by(const char* what, const ErrorsBy& by) {
  for (const auto& [key, v] : by) {
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::printf("%s %-34s n %3zu  min %+6.1f%%  median %+6.1f%%  max %+6.1f%%\n", what, key.c_str(), v.size(),
                100 * sorted.front(), 100 * median(v), 100 * sorted.back());
  }
}

// by_op (optional): keyed "<gpu> <model> tp<tp> <op> <M>", for the pass below
ErrorsBy gemm_errors(ErrorsBy* by_op = nullptr) {
  ErrorsBy by;
  for (const auto& c : test::microbench_rows("gemm_large_m_aiconfigurator_trtllm_h100_h200.csv", 13)) {
    const int tp = std::stoi(c[7]);
    const std::int64_t m = std::stoll(c[9]), n = std::stoll(c[10]), k = std::stoll(c[11]);
    const Scenario s = judged_dense(c[5], std::stoll(c[6]), c[0], tp);
    bool found = false;  // the row's N, K are the priced op's
    for (const LayerOp& op : build_iteration_layer_ops(s.model, 0, s.plan, *s.inference, decode_shape(m, 1024)))
      if (op.name == c[8]) found = op.n == n && op.k == k;
    EXPECT_TRUE(found) << c[5] << " " << c[8] << " " << n << "x" << k;
    const double error = priced_op_s(s, decode_shape(m, 1024), c[8]) / (std::stod(c[12]) * 1e-6) - 1;
    std::printf("gemm %s %s tp%d %s M %4lld N %5lld K %5lld  %+6.1f%%\n", c[0].c_str(), c[5].c_str(), tp, c[8].c_str(),
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), 100 * error);
    by[c[0] + (m <= 512 ? " M 256-512" : " M 768-2048")].push_back(error);
    if (by_op) (*by_op)[c[0] + " " + c[5] + " tp" + c[7] + " " + c[8] + " " + c[9]].push_back(error);
  }
  return by;
}

// Llama 3.1 8B QKV / proj at TP 1, Llama 3.3 70B QKV / proj at TP 1 and 2 on the tables' grid; the
// MLP widths (8B ffn 14,336, 70B 28,672) are off it, so their rows are the grid neighbours'
// (N 16,384 / 51,200 / 65,536, K 12,288 / 16,384) priced at exactly that shape.
TEST(DenseDecodeLargeBatch, Fp8GemmsArePricedFastNotSlow) {
  const ErrorsBy by = gemm_errors();
  print_by("gemm fp8", by);
  std::size_t rows = 0;
  for (const auto& [key, v] : by) {
    rows += v.size();
    for (double e : v) EXPECT_LT(std::abs(e), 0.60) << key;
  }
  ASSERT_EQ(rows, 204u);
  // Measured 2026-12-07 (report s15/13): median -29% (H100) / -26% (H200) at M 256-512 and
  // -14% / -10% at M 768-2048: TensorRT-LLM's fp8 linear (with its activation quantize) is slower
  // than priced. So the GEMMs do not make the dense decode pass slow at these batches.
  for (const char* gpu : {"h100-sxm", "h200-sxm"}) {
    EXPECT_LT(median(by.at(std::string(gpu) + " M 256-512")), -0.15) << gpu;
    EXPECT_LT(median(by.at(std::string(gpu) + " M 768-2048")), -0.05) << gpu;
  }
}

// K,V bytes a decode-attention row reads over its time, as a fraction of the GPU's peak HBM rate.
double kv_read_over_hbm(const std::vector<std::string>& c) {
  const Scenario s = judged_dense("llama3.1-8b", 14336, c[0], 1);
  const double bytes_per_value = c[4] == "fp8" ? 1 : 2;
  // batch x context tokens x KV heads x head dim 128 x (K and V) x bytes
  const double bytes = std::stod(c[5]) * std::stod(c[6]) * std::stod(c[8]) * 128 * 2 * bytes_per_value;
  return bytes / (std::stod(c[9]) * 1e-6) / s.cluster.gpu.hbm_bandwidth_Bps;
}

// The 1.2.0rc5 (and 1.3.0rc10) tables were collected with a K-only cache (collector/trtllm/
// collect_attn.py before aiconfigurator dec5f4cd2 used CacheType.SELFKONLY; that commit moved the
// collector to serving's CacheType.SELF, "Regular GQA/MHA has separate K and V tensors"): their
// large calls read K and V faster than the HBM can (H100 fp8, batch 128, 4,096 tokens: 203 us,
// 5.3 TB/s of K+V on a 3.35 TB/s GPU), so they understate a call's time up to 2x. The 1.3.0rc20
// rows, collected with the serving layout, stay under it. So this test judges against 1.3.0rc20.
TEST(DenseDecodeLargeBatch, OnlyTheFullLayoutTableIsPhysical) {
  double k_only_max = 0, full_max = 0;
  for (const auto& c : test::microbench_rows("decode_attention_aiconfigurator_h100_h200.csv", 10))
    if (c[1] == "trtllm") k_only_max = std::max(k_only_max, kv_read_over_hbm(c));
  for (const auto& c : test::microbench_rows("decode_attention_large_batch_aiconfigurator_trtllm_h100_h200.csv", 10))
    full_max = std::max(full_max, kv_read_over_hbm(c));
  std::printf("K+V read / peak HBM: 1.2.0rc5 max %.2f, 1.3.0rc20 max %.2f\n", k_only_max, full_max);
  EXPECT_GT(k_only_max, 1.3);
  EXPECT_LT(full_max, 1.0);
}

// A 1.3.0rc20 decode-attention row on the judged model and TP whose heads a GPU it has:
// 32/8 Llama 3.1 8B at TP 1; 64/8 Llama 3.3 70B at TP 1; 32/4 Llama 3.3 70B at TP 2.
double attention_row_error(const std::vector<std::string>& c) {
  const int heads = std::stoi(c[7]), kv_heads = std::stoi(c[8]);
  const std::string model = heads == 32 && kv_heads == 8 ? "llama3.1-8b" : "llama3-70b";
  const int tp = heads == 32 && kv_heads == 4 ? 2 : 1;
  const Scenario s = judged_dense(model, model == "llama3.1-8b" ? 14336 : 28672, c[0], tp);
  const IterationShape shape = decode_shape(std::stoll(c[5]), std::stoll(c[6]));
  return priced_op_s(s, shape, "attn.core") / (std::stod(c[9]) * 1e-6) - 1;
}

// A TensorRT-LLM AUTO all-reduce row on 2 GPUs as Llama 3.3 70B's TP-2 exit: its 8,192-wide
// hidden state, elements / 8192 decode rows, 16-bit.
double allreduce_row_error(const std::vector<std::string>& c) {
  const Scenario s = judged_dense("llama3-70b", 28672, c[0], 2);
  const IterationShape shape = decode_shape(std::stoll(c[6]) / 8192, 1024);
  return priced_op_s(s, shape, "attn.tp_exit") / (std::stod(c[7]) * 1e-6) - 1;
}

TEST(DenseDecodeLargeBatch, DecodeAttentionRightAtTheRunsContexts) {
  ErrorsBy by;
  std::vector<double> long_calls, short_large_batch;
  for (const auto& c : test::microbench_rows("decode_attention_large_batch_aiconfigurator_trtllm_h100_h200.csv", 10)) {
    const int heads = std::stoi(c[7]), kv_heads = std::stoi(c[8]);
    const std::int64_t batch = std::stoll(c[5]), context = std::stoll(c[6]);
    const double error = attention_row_error(c);
    std::printf("attn %s %d/%d batch %5lld context %5lld  %+6.1f%%\n", c[0].c_str(), heads, kv_heads,
                static_cast<long long>(batch), static_cast<long long>(context), 100 * error);
    by[c[0] + " " + c[7] + "/" + c[8]].push_back(error);
    if (context >= 512) long_calls.push_back(error);
    if (context <= 128 && batch >= 1024) short_large_batch.push_back(error);
  }
  print_by("attn fp8kv", by);
  ASSERT_EQ(long_calls.size(), 26u);
  // Measured 2026-12-07 (report s15/13): at 512-4,096 cached tokens (the runs' contexts; the table
  // holds at most 256K tokens a call, so batch <= 512 there) every row within -18..+2%.
  for (double e : long_calls) EXPECT_LT(std::abs(e), 0.20);
  // Short calls at 1,024-2,048 rows are priced slow (+43..+142%): a per-sequence cost the kernel
  // does not pay. The runs reach them only in 128-token prompts' first decode steps.
  for (double e : short_large_batch) EXPECT_GT(e, 0.35);
}

TEST(DenseDecodeLargeBatch, TwoGpuAllReducePricedSlow) {
  for (const auto& c : test::microbench_rows("allreduce_custom_aiconfigurator_trtllm_large_h100_h200.csv", 8)) {
    const std::int64_t elements = std::stoll(c[6]);
    const double error = allreduce_row_error(c);
    std::printf("allreduce %s tp2 rows %5lld  %+6.1f%%\n", c[0].c_str(), static_cast<long long>(elements / 8192),
                100 * error);
    // Measured 2026-12-07: NCCL's price against TensorRT-LLM's AUTO all-reduce, +22..+29% at
    // 1,024-2,048 rows and +69..+159% at 256-512 (trtllm-v1's points were judged away, s13/09).
    EXPECT_GT(error, elements >= 8388608 ? 0.15 : 0.5) << c[0] << " " << elements;
  }
}

// The table-equivalent time of an op of the pass: its priced time over (1 + its rows' error):
// the linear layers at M = batch (the mean over the MLP's grid neighbours), the attention at the
// median of its heads' rows of 512-4,096 tokens, the all-reduce at its batch's row; every other
// op (norms, RoPE, residuals, activation, the LM head, sampling; no table times them) as priced.
struct TableErrors {
  ErrorsBy gemm_by_op, attention_by_heads;
  std::map<std::string, double> allreduce;  // "<gpu> <rows>"
};

TableErrors table_errors() {
  TableErrors t;
  gemm_errors(&t.gemm_by_op);
  for (const auto& c : test::microbench_rows("decode_attention_large_batch_aiconfigurator_trtllm_h100_h200.csv", 10))
    if (std::stoll(c[6]) >= 512) t.attention_by_heads[c[0] + " " + c[7] + "/" + c[8]].push_back(attention_row_error(c));
  for (const auto& c : test::microbench_rows("allreduce_custom_aiconfigurator_trtllm_large_h100_h200.csv", 8))
    t.allreduce[c[0] + " " + std::to_string(std::stoll(c[6]) / 8192)] = allreduce_row_error(c);
  return t;
}

double op_error(const TableErrors& t, const std::string& gpu, const std::string& model, int tp, std::int64_t batch,
                const std::string& op) {
  const std::string heads = model == "llama3.1-8b" ? "32/8" : (tp == 1 ? "64/8" : "32/4");
  if (op == "attn.core") return median(t.attention_by_heads.at(gpu + " " + heads));
  if (op.ends_with("tp_exit")) return t.allreduce.at(gpu + " " + std::to_string(batch));
  const auto it =
      t.gemm_by_op.find(gpu + " " + model + " tp" + std::to_string(tp) + " " + op + " " + std::to_string(batch));
  if (it == t.gemm_by_op.end()) return 0;  // not a timed op
  double sum = 0;
  for (double e : it->second) sum += e;
  return sum / static_cast<double>(it->second.size());
}

// The dense judges' decode pass at the graph sizes 1,024 and 2,048 (1,500 cached tokens: a
// 1000/1000 or 500/2000 run's middle), priced against its table-equivalent time.
TEST(DenseDecodeLargeBatch, TheDecodePassIsNotPricedSlow) {
  const TableErrors t = table_errors();
  for (const char* gpu : {"h100-sxm", "h200-sxm"})
    for (const auto& [model, tp] :
         std::vector<std::pair<std::string, int>>{{"llama3.1-8b", 1}, {"llama3-70b", 1}, {"llama3-70b", 2}})
      for (std::int64_t batch : {1024, 2048}) {
        const Scenario s = judged_dense(model, model == "llama3.1-8b" ? 14336 : 28672, gpu, tp);
        double priced = 0, table = 0, timed = 0;
        for (const PassOpTime& op : ServingCostModel(s).op_times(decode_shape(batch, 1500))) {
          const std::string name = op.name.substr(0, op.name.size() - 4);  // less ".fwd"
          const double e = op_error(t, gpu, model, tp, batch, name);
          priced += op.time_s * op.count;
          table += op.time_s * op.count / (1 + e);
          if (e != 0) timed += op.time_s * op.count;
        }
        const double error = priced / table - 1;
        std::printf(
            "pass %s %s tp%d batch %lld: priced %.1f ms, table-equivalent %.1f ms (%+.1f%%), timed ops %.0f%%\n", gpu,
            model.c_str(), tp, static_cast<long long>(batch), 1e3 * priced, 1e3 * table, 100 * error,
            100 * timed / priced);
        EXPECT_GT(timed / priced, 0.85) << gpu << " " << model;
        // Measured 2026-12-07 (report s15/13): -0.7..-11.3%: priced fast, never slow.
        EXPECT_LT(error, 0.0) << gpu << " " << model << " " << batch;
        EXPECT_GT(error, -0.15) << gpu << " " << model << " " << batch;
      }
}

}  // namespace
}  // namespace twinsim
