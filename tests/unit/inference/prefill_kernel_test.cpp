// A serving prefill's linears and attention as the serving cost model prices them
// (ServingCostModel::op_times on the judged engine scenarios), against the engines' own kernels
// timed by ai-dynamo/aiconfigurator on an H200 (scenarios/validation/microbench/
// gemm_prefill_aiconfigurator_h100_h200.csv, prefill_attention_aiconfigurator_h100_h200.csv).
// Nothing here is fitted. Measured 2026-12-07 (report s13/11): SGLang's fp8 linears within 15%
// (median) as priced, 25% slow with serving_fp8_input_cast; the causal prefill 48-50% slow from
// 8k tokens as priced by default, 8-10% fast on flash3's curve. The tests print every row and
// the error by regime, and bound where the pricing stands, so a change to it shows here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "models/op_names.hpp"
#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/inference/iteration_ops.hpp"

namespace twinsim {
namespace {

const std::string kMicrobench = std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/";

std::vector<std::vector<std::string>> microbench_rows(const std::string& file) {
  std::ifstream in(kMicrobench + file);
  EXPECT_TRUE(in) << file;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') rows.push_back(split_csv_line(line));
  if (!rows.empty()) rows.erase(rows.begin());  // the header
  return rows;
}

Scenario judged_engine_scenario(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_scenario_file(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/engines/" + name + ".yaml",
                            overrides);
}

// One layer's op of `name` (a prefix of the op list's name) in one prefill of `batch` x `len`.
double prefill_op_s(const Scenario& s, std::int64_t batch, std::int64_t len, const std::string& name) {
  for (const PassOpTime& op : ServingCostModel(s).op_times(prefill_shape(batch, len)))
    if (op.name.rfind(name, 0) == 0) return op.time_s;
  ADD_FAILURE() << "no op " << name;
  return 0;
}

double median_log(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The measured rows at one linear's (N, K) = the op's output and input widths at the plan's TP.
struct LinearShape {
  std::string op;
  std::int64_t n = 0, k = 0;
};

std::vector<LinearShape> linear_shapes(const Scenario& s) {
  const ModelSpec& m = s.model;
  const std::int64_t tp = s.plan.tp;
  return {{op_names::kAttnQkv, (m.heads + 2 * m.kv_heads) * m.head_dim / tp, m.hidden},
          {op_names::kAttnProj, m.hidden, m.heads * m.head_dim / tp},
          {op_names::kMlpGateUp, 2 * m.ffn_hidden / tp, m.hidden},
          {op_names::kMlpDown, m.hidden, m.ffn_hidden / tp}};
}

// log(predicted / measured) of every H200 GEMM row of `engine` at a judged scenario's linears,
// keyed by "<regime>"; printed row by row.
using RegimeErrors = std::map<std::string, std::vector<double>>;

void add_gemm_errors(RegimeErrors& out, const std::string& scenario, const std::string& engine,
                     const std::string& dtype, bool cast) {
  Scenario s = judged_engine_scenario(scenario);
  s.stack.serving_fp8_input_cast = cast;
  for (const auto& c : microbench_rows("gemm_prefill_aiconfigurator_h100_h200.csv")) {
    if (c[0] != "h200" || c[1] != engine || c[3] != dtype) continue;  // gpu,engine,version,dtype,m,n,k,latency_ms
    const std::int64_t m = std::stoll(c[4]), n = std::stoll(c[5]), k = std::stoll(c[6]);
    for (const LinearShape& l : linear_shapes(s)) {
      if (l.n != n || l.k != k) continue;
      const double predicted = prefill_op_s(s, 1, m, l.op), measured = std::stod(c[7]) * 1e-3;
      const double e = std::log(predicted / measured);
      std::printf("%-6s %-4s cast %d %-12s M %5lld N %5lld K %5lld: measured %7.1f us, predicted %7.1f us (%+5.1f%%)\n",
                  engine.c_str(), dtype.c_str(), cast ? 1 : 0, l.op.c_str(), static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), measured * 1e6, predicted * 1e6,
                  100 * std::expm1(e));
      out[engine + " " + dtype + (cast ? " cast" : "") + (n <= 4096 ? " N<=4K" : " N>4K") +
          (m >= 4096 ? " M>=4K" : " M<4K")]
          .push_back(e);
    }
  }
}

double print_error_regimes(const RegimeErrors& by) {
  std::vector<double> all;
  for (const auto& [regime, e] : by) {
    std::printf("  %-30s %3zu rows, median error %+5.1f%%\n", regime.c_str(), e.size(),
                100 * std::expm1(median_log(e)));
    all.insert(all.end(), e.begin(), e.end());
  }
  return all.size();
}

double regime_median_abs(const RegimeErrors& by, const std::string& prefix) {
  std::vector<double> a;
  for (const auto& [regime, e] : by)
    if (regime.rfind(prefix, 0) == 0)
      for (double x : e) a.push_back(std::abs(x));
  return std::expm1(median_log(a));
}

// The engines' fp8 linears on an H200 (a dynamic activation quant, then CUTLASS's per-tensor
// scaled GEMM) and vLLM's bf16 linear, against the serving price of the 3B's and 8B's fp8 linears
// (their vllm082 and sglang044 scenarios) and QwQ-32B TP 2's bf16 ones. Measured 2026-12-07
// (report s13/11): SGLang's rows (a fused per-token quant kernel) lie within the bounds below,
// closer with the input cast priced; vLLM 0.14's rows run its QuantFP8 eagerly (several
// unfused passes, ~8 ns an input value: the intercept over N at fixed M, K), 1.4-2.4x what the
// serving price gives, so they bound nothing about a compiled vLLM pass and are printed only.
TEST(PrefillKernel, LinearsAgainstTheEnginesOwnKernelsOnH200) {
  RegimeErrors sglang, vllm, bf16;
  for (const bool cast : {false, true}) {
    add_gemm_errors(sglang, "sglang044-llama3.2-3b-h200-fp8", "sglang", "fp8", cast);
    add_gemm_errors(sglang, "sglang044-llama3.1-8b-h200-fp8", "sglang", "fp8", cast);
    add_gemm_errors(vllm, "vllm082-llama3.2-3b-h200-fp8", "vllm", "fp8", cast);
    add_gemm_errors(vllm, "vllm082-llama3.1-8b-h200-fp8", "vllm", "fp8", cast);
  }
  add_gemm_errors(bf16, "vllm082-qwq-32b-2xh200-bf16", "vllm", "bf16", false);
  // 30 rows with and without the cast: the 3B's 4 linears and the 8B's qkv and o, M 512..8192
  EXPECT_EQ(print_error_regimes(sglang), 2 * 6 * 5);
  print_error_regimes(vllm);
  EXPECT_EQ(print_error_regimes(bf16), 2 * 7);  // QwQ TP 2's qkv and o, M 512..32768
  const double sglang_cast = regime_median_abs(sglang, "sglang fp8 cast"),
               sglang_bare = regime_median_abs(sglang, "sglang fp8 N");
  std::printf("median |error|: sglang fp8 %.1f%% bare, %.1f%% with the cast; bf16 %.1f%%\n", 100 * sglang_bare,
              100 * sglang_cast, 100 * regime_median_abs(bf16, "vllm bf16"));
  // measured 2026-12-07: 14.9% bare, 24.8% with the cast priced (the curve already holds it)
  EXPECT_LT(sglang_bare, 0.20);
  EXPECT_GT(sglang_cast, sglang_bare);
  // bf16 from 4k rows: -8..+20% (qkv, o of QwQ-32B at TP 2)
  for (const std::string band : {"vllm bf16 N<=4K M>=4K", "vllm bf16 N>4K M>=4K"})
    for (double e : bf16.at(band)) EXPECT_TRUE(e > std::log(0.9) && e < std::log(1.25)) << band << " " << e;
}

// Causal prefill attention (one prompt of `isl` tokens, no cached prefix) as the serving
// attention op prices it, by default and on FA3's causal curve (serving_prefill_attention:
// flash3), against vLLM 0.14's and SGLang 0.5.6's FlashAttention on an H200.
TEST(PrefillKernel, CausalAttentionAgainstTheEnginesFlashAttentionOnH200) {
  struct Judged {
    std::string scenario;
    std::int64_t heads, kv_heads;
    std::vector<std::string> overrides;
  };
  // QwQ-32B at TP 1 (40 / 8 heads a GPU): the tables have no 20-head rows for its TP 2
  const std::vector<Judged> judged = {{"vllm082-llama3.1-8b-h200-fp8", 32, 8, {}},
                                      {"vllm082-llama3.2-3b-h200-fp8", 24, 8, {}},
                                      {"vllm082-qwq-32b-2xh200-bf16", 40, 8, {"plan.tp=1", "cluster.gpus_per_node=1"}}};
  std::map<std::string, std::vector<double>> by;
  for (const auto& c : microbench_rows("prefill_attention_aiconfigurator_h100_h200.csv")) {
    // gpu,engine,version,kernel_source,batch,isl,heads,kv_heads,head_dim,latency_ms
    if (c[0] != "h200") continue;
    const std::int64_t batch = std::stoll(c[4]), isl = std::stoll(c[5]);
    for (const Judged& j : judged) {
      if (std::stoll(c[6]) != j.heads || std::stoll(c[7]) != j.kv_heads) continue;
      const double measured = std::stod(c[9]) * 1e-3;
      Scenario s = judged_engine_scenario(j.scenario, j.overrides);
      s.stack.serving_prefill_attention = "";
      const double flat = prefill_op_s(s, batch, isl, op_names::kAttnCore);
      s.stack.serving_prefill_attention = "flash3";
      const double fa3 = prefill_op_s(s, batch, isl, op_names::kAttnCore);
      std::printf("%-7s %-32s b %lld isl %5lld: measured %8.1f us, default %+5.1f%%, flash3 %+5.1f%%\n", c[1].c_str(),
                  j.scenario.c_str(), static_cast<long long>(batch), static_cast<long long>(isl), measured * 1e6,
                  100 * (flat / measured - 1), 100 * (fa3 / measured - 1));
      const std::string band = isl <= 2048 ? "isl<=2K" : (isl <= 6144 ? "isl 3-6K" : "isl>=8K");
      by[c[1] + " default " + band].push_back(std::log(flat / measured));
      by[c[1] + " flash3  " + band].push_back(std::log(fa3 / measured));
      // measured 2026-12-07: from 8k tokens every row is priced 27-60% slow by default and
      // 1-24% fast on flash3's curve (the FA3 repo's 16k-token figure); to 2k, flash3 21-46% fast
      if (isl >= 8192) {
        EXPECT_GT(flat / measured, 1.2) << c[1] << " " << j.scenario << " " << batch << "x" << isl;
        EXPECT_TRUE(fa3 / measured > 0.75 && fa3 / measured < 1.0) << c[1] << " " << j.scenario << " " << isl;
      }
      if (isl <= 2048) {
        EXPECT_LT(fa3 / measured, 0.8) << c[1] << " " << j.scenario << " " << batch << "x" << isl;
      }
      // measured 2026-12-07 (s16): to 1.5k tokens the engines' call runs below the flat rate,
      // so the default prices every such row fast (-5..-42%): the 1000/2000 TTFTs' prompts
      if (isl <= 1536) {
        EXPECT_LT(flat / measured, 1.0) << c[1] << " " << j.scenario << " " << batch << "x" << isl;
      }
    }
  }
  EXPECT_EQ(print_error_regimes(by),
            2 * 2 * 3 * 3 * 10);  // {vllm, sglang} x {default, flash3} x 3 models x batch 1-4 x 10 lengths
  // from 3k tokens flash3 is the closer price for both engines
  for (const std::string engine : {"vllm", "sglang"})
    for (const std::string band : {"isl 3-6K", "isl>=8K"})
      EXPECT_LT(regime_median_abs(by, engine + " flash3  " + band), regime_median_abs(by, engine + " default " + band))
          << engine << band;
}

// The engines' own measured prefill calls (serving_prefill_attention: vllm_fa3 / sglang_fa3,
// h200-sxm.yaml prefill_attention_by_heads) on the rows their fit left out: batch 2, and the
// lengths between the fitted 1k/2k/4k/8k/16k, at the judged models' heads a GPU. The fit
// (scripts/prefill_attention_to_catalog.py, all 100 held-out rows of each engine) gives median
// |error| 2.8% (vLLM) and 1.5% (SGLang), max 22.6% and 9.7%. Priced here through the serving
// attention op (its memory side and launch included), measured 2026-12-07: median |log error|
// 0.048 (vLLM) and 0.027 (SGLang) against 0.348 and 0.371 by default; the worst, vLLM batch 2 at
// 1-3k tokens, +16..+31% slow: the pair key merges batch and heads, and its 48-80-pair curves
// come from batch 4 x 12-16 heads, slower at short prompts than batch 2 x 24-40 heads.
TEST(PrefillKernel, EngineCurvesPriceTheHeldOutRows) {
  struct Judged {
    std::string scenario;
    std::int64_t heads;
    std::vector<std::string> overrides;
  };
  const std::vector<Judged> judged = {{"vllm082-llama3.1-8b-h200-fp8", 32, {}},
                                      {"vllm082-llama3.2-3b-h200-fp8", 24, {}},
                                      {"vllm082-qwq-32b-2xh200-bf16", 40, {"plan.tp=1", "cluster.gpus_per_node=1"}}};
  const auto fitted = [](std::int64_t batch, std::int64_t isl) {
    return (batch == 1 || batch == 4) && (isl == 1024 || isl == 2048 || isl == 4096 || isl == 8192 || isl == 16384);
  };
  std::map<std::string, std::vector<double>> engine, flat;
  for (const auto& c : microbench_rows("prefill_attention_aiconfigurator_h100_h200.csv")) {
    // gpu,engine,version,kernel_source,batch,isl,heads,kv_heads,head_dim,latency_ms
    const std::int64_t batch = std::stoll(c[4]), isl = std::stoll(c[5]);
    if (c[0] != "h200" || fitted(batch, isl)) continue;
    for (const Judged& j : judged) {
      if (std::stoll(c[6]) != j.heads) continue;
      const double measured = std::stod(c[9]) * 1e-3;
      Scenario s = judged_engine_scenario(j.scenario, j.overrides);
      s.stack.serving_prefill_attention = "";
      const double before = prefill_op_s(s, batch, isl, op_names::kAttnCore);
      s.stack.serving_prefill_attention = c[1] + "_fa3";
      const double priced = prefill_op_s(s, batch, isl, op_names::kAttnCore);
      engine[c[1]].push_back(std::abs(std::log(priced / measured)));
      flat[c[1]].push_back(std::abs(std::log(before / measured)));
      if (std::abs(std::log(priced / measured)) > std::log(1.15))
        std::printf("%-6s %2lld heads b %lld isl %5lld: %+.1f%%\n", c[1].c_str(), static_cast<long long>(j.heads),
                    static_cast<long long>(batch), static_cast<long long>(isl), 100 * (priced / measured - 1));
      EXPECT_LT(std::abs(std::log(priced / measured)), std::log(1.35)) << c[1] << " " << batch << "x" << isl;
    }
  }
  for (const std::string e : {"vllm", "sglang"}) {
    ASSERT_EQ(engine[e].size(), 3u * (30 - 2 * 5));  // 3 models x (3 batches x 10 lengths less 10 fitted)
    std::printf("%s held out: median |log error| %.3f on its curve, %.3f by default\n", e.c_str(),
                median_log(engine[e]), median_log(flat[e]));
    EXPECT_LT(median_log(engine[e]), 0.06) << e;
    EXPECT_LT(median_log(engine[e]), median_log(flat[e])) << e;
  }
}

}  // namespace
}  // namespace twinsim
