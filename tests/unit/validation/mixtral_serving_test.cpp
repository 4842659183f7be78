// Issue 53's serving judge: Mixtral 8x7B with TP 2 on the TensorRT-LLM v0.9.0 performance page
// (docs/source/performance.md, "All data was generated using version 0.9.0", NVIDIA/TensorRT-LLM
// #1455; scenarios/validation/inference/trtllm09-mixtral-8x7b-*.yaml): the 18 held-out rows of
// cases.csv (trtllm09-mixtral-*), nothing fitted to them. The printed table is the report.
//
// The page is not consistent with itself on three rows: its time is shorter than reading the
// GPU's share of the weights once a pass at the datasheet's HBM peak, the experts in 16 bits as
// the 0.9 MoE plugin held them. How the page counts is not the cause: gptSessionBenchmark (the
// page's tool, benchmarks/cpp/gptSessionBenchmark.cpp at #1455) forces every sequence to the
// full output length (samplingConfig.minLength = maxNewTokens, no early EOS) and prints
// batch x output length / latency for the engine, which the table divides by its TP GPUs; the
// A100 table is FP16 by its own title, so FP8 experts are not it either. The page gives no
// Mixtral recipe (its recipes for the other models build engines from a config alone, with
// random weights): the run read fewer expert bytes than every touched expert once, and nothing
// in the source says why. The same holds on the page's L40S (TP 4) batch 32 2048/2048 row by
// hand (23.3 GB a GPU at 864 GB/s: 27 ms a step against 19.4 ms published; no L40S judge here).
// What the page's own recipes would have run, for a model built that way: Parameter.xavier_init
// (tensorrt_llm/parameter.py at #1455) draws (randn * 2 - 1) x range, a mean of -range, and
// scripts/trtllm09_dummy_moe_routing.py runs Mixtral's forward pass on such weights at TP 2:
// each rank's router sends every token of a batch to the same two experts in layer 0, the
// residual then overflows fp16 and the top-k kernel sends every token to expert 0 in every
// later layer. Priced that way (one expert a layer) the Hopper rows do not fit either
// (TTFT-2048 -32%, batch 512-1,024 128/128 +28..+36% fast), so it is recorded, not modelled. A
// second table with real weights and in-flight batching (TensorRT-LLM v0.14, the test below) is
// predicted within 15% where this one is not: the gap is this page's, not Mixtral's.
// Those rows stay judged and listed, outside the headline (`excluded` says why), as issue 53's
// training judge keeps its container-regression rows (moe_published_runs_test.cpp). The test
// checks the classification: the floor is above every excluded row's time and below every
// kept row's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "hardware/curve.hpp"
#include "scenario/load.hpp"
#include "sim/common/csv.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/trust/case_errors.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {
namespace {

constexpr const char* kBelowWeightRead = "published time below one 16-bit weight read a pass at the datasheet HBM peak";

struct MixtralRow {
  const char* name;  // cases.csv
  // today's predicted / published ratio, each band +-10% of it rounded out (a guard, not the goal)
  double low, high;
  const char* excluded = nullptr;
};

const MixtralRow kRows[] = {
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs1024-128-128", 0.89, 1.09},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs256-128-2048", 0.86, 1.07},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs64-2048-128", 0.88, 1.08},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-bs64-2048-2048", 0.69, 0.86},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-ttft-128", 1.08, 1.33},
    {"trtllm09-mixtral-8x7b-2xh200-fp8-ttft-2048", 0.90, 1.11},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs512-128-128", 0.86, 1.07},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs128-128-2048", 0.62, 0.77},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs64-2048-128", 0.80, 0.98},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-bs32-2048-2048", 0.44, 0.55, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-ttft-128", 1.31, 1.61, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xh100-fp8-ttft-2048", 0.89, 1.10},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs512-128-128", 0.79, 0.97},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs128-128-2048", 0.60, 0.74},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs64-2048-128", 0.67, 0.83},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-bs32-2048-2048", 0.38, 0.47, kBelowWeightRead},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-ttft-128", 1.21, 1.49},
    {"trtllm09-mixtral-8x7b-2xa100-fp16-ttft-2048", 0.94, 1.16},
};

struct Judged {
  const MixtralRow* row = nullptr;
  double published = 0, predicted = 0;
  double published_s = 0;     // the row's time: the batch's run, or the first token
  double weight_floor_s = 0;  // the weights' bytes its passes read, at the datasheet HBM peak
  double read_floor_s = 0;    // the same plus each pass's K,V read once (no masked-MHA repeats)
  // the MoE's work: the prefill's batch x prompt tokens, then decode_passes passes of batch tokens
  std::int64_t layers = 0, prefill_tokens = 0, decode_passes = 0, decode_tokens = 0;
  double simulated_moe_s = 0;  // the simulator's moe.* ops over those passes
};

// The seconds of a pass's moe.* ops (router, permute, the experts' grouped GEMMs, unpermute).
double moe_ops_s(const std::vector<PassOpTime>& ops) {
  double s = 0;
  for (const PassOpTime& op : ops)
    if (op.name.rfind("moe.", 0) == 0) s += op.time_s * op.count;
  return s;
}

// The row's time and its floor: a throughput row's decode passes (output_len - 1; the prefill
// taken as free) each read the GPU's weights the batch touches, a TTFT row's one prefill pass.
Judged judge(const MixtralRow& row, const trust::ValidationCase& c, const std::string& root) {
  const Scenario s = load_scenario_file(root + "/scenarios/" + c.scenario, c.overrides);
  const InferencePrediction p = predict_inference(s);
  const double hbm_Bps = s.cluster.gpu.hbm_bandwidth_Bps;
  Judged j{.row = &row, .published = c.measured};
  j.layers = s.model.layers;
  j.prefill_tokens = s.inference->batch * s.inference->prompt_len;
  j.decode_passes = c.metric == trust::Metric::ttft_s ? 0 : p.decode_passes;
  j.decode_tokens = s.inference->batch;
  j.simulated_moe_s = moe_ops_s(p.prefill_ops) + double(j.decode_passes) * moe_ops_s(p.decode_ops);
  if (c.metric == trust::Metric::ttft_s) {
    j.predicted = p.ttft_s;
    j.published_s = c.measured;
    j.weight_floor_s = p.prefill.weight_bytes / hbm_Bps;
    j.read_floor_s = j.weight_floor_s;  // the prompt's K,V are written, not read from HBM
  } else {
    j.predicted = p.output_tokens_per_s;
    j.published_s = double(s.inference->batch) * double(s.inference->output_len) / c.measured;
    j.weight_floor_s = double(p.decode_passes) * p.decode_weight_bytes_per_step / hbm_Bps;
    // decode pass i (1..n) reads batch x (prompt_len + i) tokens' K,V: n prompt_len + n(n+1)/2 a sequence
    const double n = double(p.decode_passes);
    const double kv_tokens = double(s.inference->batch) * (n * double(s.inference->prompt_len) + n * (n + 1) / 2);
    j.read_floor_s = j.weight_floor_s + kv_tokens * double(p.kv_cache_bytes_per_token_per_gpu) / hbm_Bps;
  }
  return j;
}

std::vector<Judged> judge_all() {
  const std::string root = TWINSIM_SOURCE_DIR;
  const std::vector<trust::ValidationCase> cases =
      trust::read_validation_cases(root + "/scenarios/validation/cases.csv");
  std::vector<Judged> judged;
  for (const MixtralRow& row : kRows) {
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const auto& v) { return v.name == row.name; });
    if (c == cases.end()) ADD_FAILURE() << row.name << " is not in cases.csv";
    if (c != cases.end()) judged.push_back(judge(row, *c, root));
  }
  return judged;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(MixtralServing, Trtllm09RowsWithinTheirBandsAndTheHeadline) {
  std::vector<double> kept;
  for (const Judged& j : judge_all()) {
    const double ratio = j.predicted / j.published;
    std::printf("  %-50s published %9.4g predicted %9.4g (%+6.1f%%) floor %4.0f%% (+KV %4.0f%%) of its time%s%s\n",
                j.row->name, j.published, j.predicted, 100 * (ratio - 1), 100 * j.weight_floor_s / j.published_s,
                100 * j.read_floor_s / j.published_s, j.row->excluded ? "  EXCLUDED: " : "",
                j.row->excluded ? j.row->excluded : "");
    EXPECT_GE(ratio, j.row->low) << j.row->name;
    EXPECT_LE(ratio, j.row->high) << j.row->name;
    if (!j.row->excluded) kept.push_back(std::abs(ratio - 1));
  }
  ASSERT_EQ(kept.size(), 15u);
  const double worst = *std::max_element(kept.begin(), kept.end());
  std::printf("  headline over %zu rows: median |error| %.1f%%, max %.1f%%\n", kept.size(), 100 * median(kept),
              100 * worst);
  EXPECT_LE(median(kept), 0.15);  // issue 53: within 15% of the table
}

// The classification the exclusions rest on, from the simulator's own byte counts and the
// catalog's datasheet bandwidths: an excluded row's published time is below its weight floor
// alone, a kept row's is above its weights plus each decode pass's K,V read once (the floor of
// issue 56, s13; 2,047 decode passes, the prefill free: H100 bs32 2048/2048 24.9 s published
// against 28.0 s for 45.9 GB a GPU a pass at 3.35 TB/s, 30.0 s with K,V; A100 40.9 s against
// 46.7 s and 53.2 s).
TEST(MixtralServing, ExcludedRowsAreExactlyThoseBelowTheWeightReadFloor) {
  for (const Judged& j : judge_all()) {
    if (j.row->excluded) EXPECT_LT(j.published_s, j.weight_floor_s) << j.row->name;
    else EXPECT_GE(j.published_s, j.read_floor_s) << j.row->name;
  }
}

// Why no component price can bring the batch-1 128-token TTFT rows to 0 (kept H200 +23.5%, A100
// +36.5%; H100 +48.8% excluded): the simulator prices each as a pass that reads every expert
// once in 16 bits (a 128-token prompt sends 256 rows to 8 experts: all touched), 45 GB a GPU:
// H200 14.95 ms = experts' grouped GEMMs 11.43 (~83% of HBM peak) + 64 all-reduces 1.36 +
// attention 0.19 + norms, router, permute and the rest 1.96 (H100 16.26 / 1.36 / 0.20 / 2.11,
// A100 26.56 / 2.87 / 0.16 / 2.90; `twinsim simulate ... --json`, inference.prefill.ops). Such a
// pass is bandwidth-bound: H100 over H200 predicted 19.95 / 14.95 = 1.33 (HBM 3.35 vs 4.8 TB/s).
// The page's own ratio is 13.4 / 12.1 = 1.11, the same as its dense Mistral 7B rows (6.5 / 5.9 =
// 1.10, which the simulator predicts 30-39% too fast): at most ~3 ms of the page's H200 12.1 ms
// scales with bandwidth, ~9 ms does not (13.4 - 12.1 = 0.43 x the H200's bandwidth-bound part).
// Cheaper GEMMs, all-reduces or host time keep the ratio at >= 1.3 and cannot reach both rows;
// the A100's 23.8 ms leaves ~1 ms beyond its 16-bit weight read at the datasheet 2.04 TB/s where
// the Hopper rows imply ~9 ms. The bs32 2048/2048 rows are below the same read (12.2 ms a step
// on the H100 against 13.7 ms; 20.0 ms on the A100, FP16 by the table's title, against 22.8 ms),
// and 32 tokens x top-2 leave an expert untouched with probability (6/8)^32 ~ 1e-4. None of
// gptSessionBenchmark's static batch, its max_batch / max_input limits, its KV cache
// (contiguous in the page's recipes, --paged_kv_cache disable; 32 x 4,096 tokens fit) or the
// MoE plugin's small-M rate can make a pass faster than its weight read: these rows are the
// page's, not the engine's. Held by the test below.
TEST(MixtralServing, Trtllm09BatchOneTtftIsNotBandwidthBoundOnThePage) {
  const std::string root = TWINSIM_SOURCE_DIR;
  const auto cases = trust::read_validation_cases(root + "/scenarios/validation/cases.csv");
  const auto ratio = [&](const std::string& h100, const std::string& h200, double& published) {
    const auto find = [&](const std::string& n) {
      const auto c = std::find_if(cases.begin(), cases.end(), [&](const auto& v) { return v.name == n; });
      if (c == cases.end()) throw std::runtime_error(n + " is not in cases.csv");
      return *c;
    };
    const trust::ValidationCase a = find(h100), b = find(h200);
    published = a.measured / b.measured;
    const auto ttft = [&](const trust::ValidationCase& c) {
      return predict_inference(load_scenario_file(root + "/scenarios/" + c.scenario, c.overrides)).ttft_s;
    };
    return ttft(a) / ttft(b);
  };
  double mixtral_published = 0, mistral_published = 0;
  const double mixtral = ratio("trtllm09-mixtral-8x7b-2xh100-fp8-ttft-128", "trtllm09-mixtral-8x7b-2xh200-fp8-ttft-128",
                               mixtral_published);
  const double mistral =
      ratio("trtllm09-mistral-7b-h100-fp8-ttft-128", "trtllm09-mistral-7b-h200-fp8-ttft-128", mistral_published);
  std::printf("  TTFT-128 H100/H200: Mixtral predicted %.2f published %.2f; Mistral 7B predicted %.2f published %.2f\n",
              mixtral, mixtral_published, mistral, mistral_published);
  EXPECT_GT(mixtral, 1.25);            // the simulator's pass reads its weights: ~ the HBM ratio 1.43
  EXPECT_LT(mixtral_published, 1.15);  // the page's is not
  EXPECT_LT(std::abs(mixtral_published - mistral_published), 0.05);  // and moves as its dense rows do
}

// One Mixtral 8x7B MoE layer's forward (8 experts of 4096 x 14336, top 2, TP 2: 7,168 of each
// expert's width a GPU) in 16 bits, as each engine's module runs it (routing to finalize),
// measured by tokens: ai-dynamo/aiconfigurator's tables (Apache-2.0, commit 095f58a5). H100, H200:
// fused_moe_aiconfigurator_serving_shapes.csv (TensorRT-LLM 1.2.0rc5's CUTLASS module, vLLM
// 0.14's Triton fused_moe, SGLang 0.5.6.post2's on the H200); A100: fused_moe_aiconfigurator_
// mixtral_a100.csv (TensorRT-LLM 1.0.0, whose A100 MoE GEMM is CUTLASS's Sm80 kernel as the 0.9
// plugin's was, and vLLM 0.14). By GPU, then engine: a curve of {tokens, seconds}; where a
// series has two routings (the A100's power-law ones), the faster.
using ModuleCurves = std::map<std::string, std::map<std::string, std::vector<CurvePoint>>>;

ModuleCurves measured_mixtral_moe_modules() {
  std::map<std::string, std::map<std::string, std::map<double, double>>> fastest;
  for (const char* file :
       {"fused_moe_aiconfigurator_serving_shapes.csv", "fused_moe_aiconfigurator_mixtral_a100.csv"}) {
    std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file);
    EXPECT_TRUE(in) << file;
    std::string line;
    std::getline(in, line);  // source,framework,version,kernel,gpu,dtype,model,..,tp,ep,distribution,tokens,ms
    while (std::getline(in, line)) {
      const auto c = split_csv_line(line);
      if (c.size() != 16 || c[6] != "mixtral-8x7b" || c[5] != "bfloat16" || c[11] != "2" || c[12] != "1") continue;
      const double s = std::stod(c[15]) * 1e-3;  // ms
      double& best = fastest[c[4]][c[1] + " " + c[2]].try_emplace(std::stod(c[14]), s).first->second;
      best = std::min(best, s);
    }
  }
  ModuleCurves curves;
  for (const auto& [gpu, engines] : fastest)
    for (const auto& [engine, points] : engines)
      for (const auto& [tokens, s] : points) curves[gpu][engine].push_back({tokens, s});
  return curves;
}

// A module's time at `tokens`: between measured counts the curve's interpolation; beyond the
// last (16,384 on Hopper, 65,536 on the A100), that count's time per token, math-bound there.
double module_time_s(const std::vector<CurvePoint>& curve, double tokens) {
  const CurvePoint& last = curve.back();
  return tokens > last.x ? last.y * tokens / last.x : interpolate_curve(curve, tokens);
}

// The row's MoE work at one engine's measured module: every layer's prefill module, and every
// decode pass's (issue 56, s15).
double measured_moe_s(const Judged& j, const std::vector<CurvePoint>& curve) {
  return double(j.layers) * (module_time_s(curve, double(j.prefill_tokens)) +
                             double(j.decode_passes) * module_time_s(curve, double(j.decode_tokens)));
}

// What the v0.9 Mixtral rows the simulator prices 25-52% slow leave for anything but the MoE.
// The floor: the fastest measured engine's MoE modules over the row's passes plus each decode
// pass's K,V read once at the datasheet HBM peak (read_floor_s less weight_floor_s); nothing
// else (attention's math, the 64 all-reduces, norms, host) counted. Published over that floor
// (`./build/tests/test_validation --gtest_filter=MixtralServing.Trtllm09*Modules*` prints all
// 18 rows): A100 TTFT-128 0.82, H100 TTFT-128 0.83 (excluded), H200 TTFT-128 1.04, A100 bs64
// 2048/128 1.02, H100 bs128 128/2048 1.06, A100 bs128 128/2048 1.09: at or below what any
// measured MoE kernel does, though TensorRT-LLM 1.0 / 1.2 and vLLM 0.14 are later than 0.9 (on
// the A100, TRT-LLM 1.0's Sm80 module gives 0.74, 0.99 and 0.90 for the TTFT-128, bs128 and
// bs64 rows). The simulator's own moe.* ops there are 0.95-1.11x the fastest measured module's:
// the MoE is not the over-price, and the rest of the pass has no room on the page. Only H200
// bs64 2048/2048 (1.26) leaves time beyond MoE and K,V: 7.5 s over 2,047 passes, 3.7 ms a pass, where
// the simulator spends 9.1 ms a pass outside the MoE (the masked-MHA repeats, Trtllm09Mistral.*). The
// prefill-heavy Hopper rows sit 1.5-2.9x above the modern modules (0.9's Sm80 kernel at large
// M; trtllm.yaml moe_gemm_generation), which is why the table cannot be a module-rate fit.
TEST(MixtralServing, Trtllm09SmallBatchRowsSitAtTheMeasuredMoeModules) {
  const ModuleCurves curves = measured_mixtral_moe_modules();
  const std::map<std::string, double> at_most = {
      // published over the fastest floor: at most (<= 1.10, no room) or, negative, more than
      {"trtllm09-mixtral-8x7b-2xa100-fp16-ttft-128", 1.10},
      {"trtllm09-mixtral-8x7b-2xh100-fp8-ttft-128", 1.10},
      {"trtllm09-mixtral-8x7b-2xa100-fp16-bs64-2048-128", 1.10},
      {"trtllm09-mixtral-8x7b-2xh100-fp8-bs128-128-2048", 1.10},
      {"trtllm09-mixtral-8x7b-2xa100-fp16-bs128-128-2048", 1.10},
      {"trtllm09-mixtral-8x7b-2xh200-fp8-bs64-2048-2048", -1.20},
      {"trtllm09-mixtral-8x7b-2xh200-fp8-ttft-128", 1.10}};
  int checked = 0;
  for (const Judged& j : judge_all()) {
    const std::string name = j.row->name;
    const std::string gpu = name.find("h100") != std::string::npos   ? "h100"
                            : name.find("h200") != std::string::npos ? "h200"
                                                                     : "a100";
    ASSERT_TRUE(curves.contains(gpu)) << gpu;
    const double kv_s = j.read_floor_s - j.weight_floor_s;
    double floor_s = std::numeric_limits<double>::infinity(), moe_s = 0;
    std::string line;
    for (const auto& [engine, curve] : curves.at(gpu)) {
      const double measured = measured_moe_s(j, curve);
      if (measured + kv_s < floor_s) floor_s = measured + kv_s, moe_s = measured;
      char ratio[64];
      std::snprintf(ratio, sizeof ratio, "  %s %.2f", engine.c_str(), j.published_s / (measured + kv_s));
      line += ratio;
    }
    std::printf(
        "  %-50s published %8.4f s, simulated MoE %8.4f s = %.2f x the fastest module; published over "
        "module + K,V:%s\n",
        name.c_str(), j.published_s, j.simulated_moe_s, j.simulated_moe_s / moe_s, line.c_str());
    const auto bound = at_most.find(name);
    if (bound == at_most.end()) continue;
    ++checked;
    if (bound->second > 0) {
      EXPECT_LE(j.published_s / floor_s, bound->second) << name;
    } else {
      EXPECT_GT(j.published_s / floor_s, -bound->second) << name;
    }
    EXPECT_NEAR(j.simulated_moe_s / moe_s, 1.0, 0.15) << name;  // the simulator's MoE is the modules'
  }
  EXPECT_EQ(checked, 7);
}

// The second engine table (issue 53: "a published engine table"): TensorRT-LLM v0.14.0's
// performance overview, Mixtral 8x7B at TP 2 on H200 and H100 in FP8 and on H100 and
// A100-SXM4-80GB in FP16, nine ISL/OSL pairs each (scenarios/validation/engines/
// trtllm014-mixtral-8x7b-*.yaml; cases.csv rows trtllm014-mixtral-*, held out). Its engines were
// built from the Hugging Face checkpoint (real routing) and served with in-flight batching;
// the offline benchmark queues the page's $num_requests of one ISL/OSL at once. Read from the
// committed trust table (sim/trust/case_errors.csv: `twinsim serve --rate inf --requests N` of
// each row), which TrustTable's check holds to today's predictions: the ~7 s of serving
// simulation the 36 rows take runs once in the suite, not twice.
TEST(MixtralServing, Trtllm014TableWithinFifteenPercent) {
  std::vector<double> errors;
  for (const trust::CaseError& e : trust::committed_case_errors()) {
    if (e.name.rfind("trtllm014-mixtral-", 0) != 0) continue;
    const double error = e.predicted / e.measured - 1;  // tokens/s: + is predicted too fast
    std::printf("  %-46s published %8.0f predicted %8.0f (%+6.1f%%)\n", e.name.c_str(), e.measured, e.predicted,
                100 * error);
    errors.push_back(std::abs(error));
  }
  ASSERT_EQ(errors.size(), 36u) << "4 GPU columns x 9 ISL/OSL; after adding cases run `twinsim trust-table`";
  const auto within = std::count_if(errors.begin(), errors.end(), [](double x) { return x <= 0.15; });
  const double worst = *std::max_element(errors.begin(), errors.end());
  std::printf("  v0.14 table, %zu rows: median |error| %.1f%%, max %.1f%%, %td within 15%%\n", errors.size(),
              100 * median(errors), 100 * worst, within);
  EXPECT_LE(median(errors), 0.15);  // issue 53: within 15% of a published engine table
  EXPECT_GE(within, 33);            // today's 33 of 36 (a guard against a regression)
  EXPECT_LE(worst, 0.30);           // today's worst: H100 FP8 128/4096, +21.3% (the wave step below)
}

// The v0.14 table's one row outside 15%, H100 FP8 128/4096 (+21.3%), is a wave count, not a
// step time. trtllm-bench queues its 1,500 requests at once; every request is 4,224 tokens and
// GUARANTEED_NO_EVICT admits one only when its whole sequence fits, so they run in waves of the
// pool's size: ceil(1,500 / sequences) waves of 4,096 steps. The simulator's pool (0.90 x HBM less
// weights, activations, buffers) holds 379 sequences: 4 waves (1,500 / 379 = 3.96), 1.1% above the
// 375 at which a fifth wave starts. The published 1,500 x 4,096 / 12,071 = 509 s is more than the
// simulator's four waves of 105 s (420 s): four and a short fifth take 464 s. TensorRT-LLM's own rule is 0.90 of the
// memory free after loading (--kv_cache_free_gpu_mem_fraction), and its published H100 log
// (docs/source/performance/perf-benchmarking.md, trtllm-bench 0.12.0.dev2024073000, Llama-2-7B
// FP8: "total: 79.10 GiB, available: 63.62 GiB" after a 6,214 MiB engine, 928.77 MiB of
// execution context, 1.14 GB of runtime buffers and 4.35 GB of decoder) leaves 3.4 GiB used by
// none of those: with that reserve alone the rule gives this engine 375 sequences, the step
// itself. No v0.14 Mixtral log says which side it fell: recorded here, not fitted. The H200 FP8
// (803 sequences, 2 waves; a third starts below 750) and the 16-bit engines
// (105-106 sequences, 15 waves) are not near a step. The test holds the mechanism: today's pool
// gives 4 waves, one 0.86 GB smaller (memory_utilization 0.89: 372 sequences) gives 5, the
// throughput drops more than 8% for it, and the five-wave figure is within 15% of the published one.
TEST(MixtralServing, Trtllm014H100Fp8LongOutputRowSitsOnAWaveStep) {
  const std::string root = TWINSIM_SOURCE_DIR;
  const auto cases = trust::read_validation_cases(root + "/scenarios/validation/cases.csv");
  const auto c = std::find_if(cases.begin(), cases.end(),
                              [](const auto& v) { return v.name == "trtllm014-mixtral-8x7b-2xh100-fp8-128-4096"; });
  ASSERT_NE(c, cases.end());
  const Scenario s = load_scenario_file(root + "/scenarios/" + c->scenario, c->overrides);
  const std::int64_t requests = s.inference->batch;
  const std::int64_t sequence_blocks = (s.inference->prompt_len + s.inference->output_len) / 16;  // 4,224 / 16
  ServeRequest request;  // as run_offline_benchmark: every request at t = 0
  request.requests = requests;
  request.rate_per_s = std::numeric_limits<double>::infinity();
  request.options.keep_occupancy = false;
  request.options.max_sequence_steps = 0;
  const ServeRun today = run_serve(s, request);
  request.options.kv.memory_utilization = 0.89;
  const ServeRun smaller = run_serve(s, request);
  const std::int64_t seqs_today = today.result.total_blocks / sequence_blocks;
  const std::int64_t seqs_smaller = smaller.result.total_blocks / sequence_blocks;
  const double tput_today = today.summary.output_tokens_per_s, tput_smaller = smaller.summary.output_tokens_per_s;
  std::printf(
      "  pool %lld sequences: %lld waves, %8.0f tok/s (%+5.1f%%); pool %lld: %lld waves, %8.0f tok/s (%+5.1f%%)\n",
      static_cast<long long>(seqs_today), static_cast<long long>((requests + seqs_today - 1) / seqs_today), tput_today,
      100 * (tput_today / c->measured - 1), static_cast<long long>(seqs_smaller),
      static_cast<long long>((requests + seqs_smaller - 1) / seqs_smaller), tput_smaller,
      100 * (tput_smaller / c->measured - 1));
  EXPECT_EQ((requests + seqs_today - 1) / seqs_today, 4);
  EXPECT_EQ((requests + seqs_smaller - 1) / seqs_smaller, 5);
  EXPECT_LT(tput_smaller, 0.92 * tput_today);  // a 1.8% smaller pool, a whole wave more
  EXPECT_LT(std::abs(tput_smaller / c->measured - 1), 0.15);
}

}  // namespace
}  // namespace twinsim
