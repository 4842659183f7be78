// `serve --engine-bench`: the engines' benchmark metrics (sim/inference/bench_report.hpp) on a
// hand-made run, the benchmark request sets (bench_requests.hpp), and the ITL the serving
// loop records.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "serving_scenarios.hpp"
#include "sim/inference/bench_report.hpp"
#include "sim/inference/bench_requests.hpp"
#include "sim/inference/numpy_legacy_random.hpp"
#include "sim/inference/serve_run.hpp"

namespace twinsim {
namespace {

// Two requests, worked by hand as vllm/benchmarks/serve.py's calculate_metrics does:
// A arrives at 0, first token 0.1, finishes 0.5 with 5 tokens: TPOT (0.5 - 0.1) / 4 = 0.1;
// B arrives at 0.2, first token 0.5, finishes 0.6 with 2 tokens: TPOT 0.1 / 1 = 0.1.
ServingResult two_requests() {
  ServingResult r;
  r.requests = {{0.0, 10, 5}, {0.2, 30, 2}};
  r.times.resize(2);
  r.times[0].first_token_s = 0.1, r.times[0].finish_s = 0.5;
  r.times[1].first_token_s = 0.5, r.times[1].finish_s = 0.6;
  r.itl_s = {0.1, 0.1, 0.1, 0.1, 0.1};
  return r;
}

TEST(BenchMetrics, DefinitionsAsVllmBenchServe) {
  const BenchMetrics m = bench_metrics(two_requests(), {90, 99}, {});
  EXPECT_EQ(m.completed, 2);
  EXPECT_DOUBLE_EQ(m.duration_s, 0.6);
  EXPECT_EQ(m.total_input, 40);
  EXPECT_EQ(m.total_output, 7);
  EXPECT_NEAR(m.output_throughput, 7 / 0.6, 1e-9);
  EXPECT_NEAR(m.total_token_throughput, 47 / 0.6, 1e-9);
  EXPECT_NEAR(m.ttft.mean_s, (0.1 + 0.3) / 2, 1e-12);
  EXPECT_NEAR(m.ttft.median_s, 0.2, 1e-12);
  EXPECT_NEAR(m.ttft.percentile_s[0], 0.1 + 0.9 * 0.2, 1e-12);  // numpy linear between 0.1 and 0.3
  EXPECT_NEAR(m.tpot.mean_s, 0.1, 1e-12);
  EXPECT_NEAR(m.e2el.mean_s, (0.5 + 0.4) / 2, 1e-12);
  EXPECT_NEAR(m.itl.median_s, 0.1, 1e-12);
  EXPECT_EQ(m.request_goodput, 0);  // no SLO given
}

TEST(BenchMetrics, GoodputCountsRequestsMeetingEverySlo) {
  ServingSlo slo;
  slo.ttft_s = 0.2;  // A (0.1) meets it, B (0.3) does not
  EXPECT_NEAR(bench_metrics(two_requests(), {99}, slo).request_goodput, 1 / 0.6, 1e-9);
  slo.tpot_s = 0.05;  // neither meets 50 ms a token
  EXPECT_EQ(bench_metrics(two_requests(), {99}, slo).request_goodput, 0);
}

TEST(BenchMetrics, PrintsVllmsResultBlock) {
  std::ostringstream out;
  print_vllm_bench(out, bench_metrics(two_requests(), {99}, {}), std::numeric_limits<double>::infinity(), {});
  const std::string text = out.str();
  EXPECT_NE(text.find("============ Serving Benchmark Result ============"), std::string::npos) << text;
  EXPECT_NE(text.find("Successful requests:                     2"), std::string::npos) << text;
  EXPECT_NE(text.find("Output token throughput (tok/s):         11.67"), std::string::npos) << text;
  EXPECT_NE(text.find("-----Time per Output Token (excl. 1st token)------"), std::string::npos) << text;
  EXPECT_NE(text.find("P99 ITL (ms):"), std::string::npos) << text;
  EXPECT_EQ(text.find("Request rate configured"), std::string::npos) << "an infinite rate prints no rate";
  EXPECT_EQ(text.find("Maximum request concurrency"), std::string::npos) << "no cap, no line";
  std::ostringstream capped;
  print_vllm_bench(capped, bench_metrics(two_requests(), {99}, {}), 4.0, {}, 10);
  // vLLM prints the cap right after the successful requests, then the configured rate
  const std::string with_cap = capped.str();
  const std::size_t cap = with_cap.find("Maximum request concurrency:             10");
  ASSERT_NE(cap, std::string::npos) << with_cap;
  EXPECT_LT(with_cap.find("Successful requests:"), cap);
  EXPECT_GT(with_cap.find("Request rate configured (RPS):          4.00"), cap) << with_cap;
}

TEST(BenchRequests, PoissonWhenNotBurstyAndFixedLengths) {
  BenchRequestSpec spec;
  spec.count = 50, spec.rate_per_s = 3, spec.prompt_len = 100, spec.output_len = 20, spec.seed = 7;
  const std::vector<Request> a = bench_requests(spec), b = poisson_requests(50, 3, 7, 100, 20);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
}

// Gamma gaps of shape k and scale 1 / (rate k): mean 1 / rate, variance 1 / (k rate^2).
TEST(BenchRequests, GammaGapsKeepTheRateAndSpreadByBurstiness) {
  for (double k : {0.5, 1.0, 4.0}) {
    BenchRequestSpec spec;
    spec.count = 40000, spec.rate_per_s = 2, spec.burstiness = k, spec.prompt_len = 10, spec.output_len = 10;
    spec.seed = 3, spec.range_ratio = k == 1.0 ? 0.5 : 0;  // k = 1 with lengths drawn: the gamma path
    const std::vector<Request> r = bench_requests(spec);
    double sum = 0, sq = 0, prev = 0;
    for (const Request& q : r) {
      const double gap = q.arrival_s - prev;
      prev = q.arrival_s;
      sum += gap, sq += gap * gap;
    }
    const double n = static_cast<double>(r.size()), mean = sum / n, var = sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.02) << "burstiness " << k;
    EXPECT_NEAR(var, 1 / (k * 4), 0.06 / k) << "burstiness " << k;
  }
}

// vLLM's random dataset: lengths uniform over [len (1 - r), len (1 + r)], mean len.
TEST(BenchRequests, RangeRatioDrawsLengthsAroundTheMean) {
  BenchRequestSpec spec;
  spec.count = 20000, spec.rate_per_s = std::numeric_limits<double>::infinity(), spec.prompt_len = 1000;
  spec.output_len = 200, spec.range_ratio = 0.5, spec.seed = 1;
  double prompts = 0;
  std::int64_t low = 1 << 30, high = 0;
  for (const Request& q : bench_requests(spec)) {
    EXPECT_EQ(q.arrival_s, 0);  // an infinite rate: all at once
    prompts += static_cast<double>(q.prompt_len);
    low = std::min(low, q.prompt_len), high = std::max(high, q.prompt_len);
    EXPECT_GE(q.output_len, 100);
    EXPECT_LE(q.output_len, 300);
  }
  EXPECT_NEAR(prompts / 20000, 1000, 10);
  EXPECT_EQ(low, 500);
  EXPECT_EQ(high, 1500);
}

// numpy's legacy generator, drawn by numpy 2.4 itself (np.random.seed(S), then the calls below):
// the integers, the polar-method normals under gamma's shape 2 and the shape < 1 branch.
TEST(NumpyLegacyRandom, DrawsWhatNumpyDraws) {
  NumpyLegacyRandom ints(7);  // randint(0, 128000, size=5), then randint(0, 151643, size=3)
  for (std::int64_t v : {61615, 58564, 49689, 10742, 104003}) EXPECT_EQ(ints.randint(0, 128000), v);
  for (std::int64_t v : {53459, 66455, 79463}) EXPECT_EQ(ints.randint(0, 151643), v);
  NumpyLegacyRandom half(3), two(3);  // gamma(0.5, 0.25, size=4), gamma(2.0, 0.25, size=4)
  for (double v : {0.07660927281742758, 0.021156391780502076, 0.40363265647400937, 0.003942917551074535})
    EXPECT_DOUBLE_EQ(half.gamma(0.5, 0.25), v);
  for (double v : {1.301583808791602, 0.5740245516278103, 0.3333989481020006, 0.3123363035696161})
    EXPECT_DOUBLE_EQ(two.gamma(2.0, 0.25), v);
}

// vLLM's benchmark_serving.py of 2025 (the script simon-mo/R1-Benchmark ran): np.random.seed(0),
// the random dataset's randint draws (lengths of one value draw nothing; 50 offsets over the
// tokenizer's vocab_size), then a gap after each request. Expected: the same calls in numpy 2.4.
// The published runs' own send times, read back from their per-request ITLs, are 0.120, 0.127,
// 0.238 s for QwQ-32B (Qwen, 151,643 tokens) and 0.103, 0.119, 0.409 s for Llama 3 (128,000): the
// client's asyncio sleeps run 0-3 ms late. A different vocabulary draws other offsets, so other gaps.
TEST(BenchRequests, NumpyDrawsAreBenchmarkServingsArrivals) {
  BenchRequestSpec spec;
  spec.count = 50, spec.rate_per_s = 10, spec.prompt_len = 1000, spec.output_len = 2000, spec.seed = 0;
  spec.numpy_tokenizer_vocab = 151643;
  const std::vector<Request> qwen = bench_requests(spec);
  ASSERT_EQ(qwen.size(), 50u);
  EXPECT_EQ(qwen[0].arrival_s, 0);  // the first request goes at once
  EXPECT_DOUBLE_EQ(qwen[1].arrival_s, 0.11961078011333702);
  EXPECT_DOUBLE_EQ(qwen[2].arrival_s, 0.12582230970586858);
  EXPECT_DOUBLE_EQ(qwen[3].arrival_s, 0.23571355771167254);
  EXPECT_NEAR(qwen[49].arrival_s, 3.8686998798922536, 1e-12);
  EXPECT_EQ(qwen[49].prompt_len, 1000);
  EXPECT_EQ(qwen[49].output_len, 2000);
  spec.numpy_tokenizer_vocab = 128000;
  const std::vector<Request> llama = bench_requests(spec);
  EXPECT_DOUBLE_EQ(llama[1].arrival_s, 0.1021431886392073);
  EXPECT_DOUBLE_EQ(llama[3].arrival_s, 0.4070582018811244);
  EXPECT_NEAR(llama[49].arrival_s, 4.484596622164727, 1e-12);
  spec.range_ratio = 0.1;  // the 2025 script's own range ratio is another rule: refused
  EXPECT_THROW(bench_requests(spec), std::invalid_argument);
}

// The server's prompt length (server_prompt_len): the script's prompts are its ids decoded to
// text and encoded again by the server, which gives more tokens than it drew; the requests carry
// that length and the client's arrivals stay the same draws (the lengths draw nothing). 1049:
// Llama 3's mean at 1,000 ids (scripts/random_prompt_server_tokens.py, 1048.6 incl. <|begin_of_text|>).
TEST(BenchRequests, ServerPromptLengthKeepsTheScriptsArrivals) {
  BenchRequestSpec spec;
  spec.count = 50, spec.rate_per_s = 10, spec.prompt_len = 1000, spec.output_len = 2000, spec.seed = 0;
  spec.numpy_tokenizer_vocab = 128000;
  const std::vector<Request> drawn = bench_requests(spec);
  spec.server_prompt_len = 1049;
  const std::vector<Request> served = bench_requests(spec);
  ASSERT_EQ(served.size(), drawn.size());
  for (std::size_t i = 0; i < served.size(); ++i) {
    EXPECT_EQ(served[i].arrival_s, drawn[i].arrival_s) << i;
    EXPECT_EQ(served[i].prompt_len, 1049) << i;
    EXPECT_EQ(served[i].output_len, 2000) << i;
  }
  EXPECT_DOUBLE_EQ(served[3].arrival_s, 0.4070582018811244);  // as NumpyDrawsAreBenchmarkServingsArrivals
  spec.numpy_tokenizer_vocab = 0;  // this project's own draws take their lengths as given: refused
  EXPECT_THROW(bench_requests(spec), std::invalid_argument);
  spec.numpy_tokenizer_vocab = 128000, spec.server_prompt_len = -1;
  EXPECT_THROW(bench_requests(spec), std::invalid_argument);
}

// Through the serving loop: a request decoding alone gets one token a pass, so its ITLs are
// the pass times and their mean is its TPOT.
TEST(BenchMetrics, ItlOfALoneRequestIsItsTpot) {
  const Scenario s = test::serving_scenario("llama3-8b", "dgx-h100", 1, 1, 1, 1, 512, 64);
  ServeRequest request;
  request.requests = 1;
  request.engine_bench = true;
  const ServeRun run = run_serve(s, request);
  EXPECT_EQ(run.result.itl_s.size(), 63u);
  EXPECT_NEAR(run.bench.itl.mean_s, run.bench.tpot.mean_s, 1e-12);
  EXPECT_TRUE(run.json.contains("engine_bench"));
}

}  // namespace
}  // namespace twinsim

namespace twinsim {
namespace {

// The most sequences any pass of the run held.
std::int64_t peak_running(const ServeRun& run) {
  std::int64_t peak = 0;
  for (const OccupancySample& o : run.result.occupancy) peak = std::max(peak, o.running);
  return peak;
}

// vLLM V1's budget on an H100 (stacks/vllm-v1.yaml: 1024 sequences a pass) applies unless
// --max-num-seqs is given: 3,000 short requests at once run far more than serve's 256 together.
TEST(EngineStacks, SchedulerDefaultsComeFromTheStackUnlessGiven) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h100", 1, 1, 1, 1, 128, 32, "fp8", "fp8");
  s.stack = catalog_stack("vllm-v1");
  ServeRequest request;
  request.requests = 3000;
  request.rate_per_s = std::numeric_limits<double>::infinity();
  const std::int64_t engine = peak_running(run_serve(s, request));
  EXPECT_GT(engine, 256);
  EXPECT_LE(engine, 1024);
  request.options.max_sequences = 256;
  request.max_sequences_given = true;
  EXPECT_LE(peak_running(run_serve(s, request)), 256);
}

// TensorRT-LLM's GUARANTEED_NO_EVICT admission (serving_output_reserve 1) never preempts;
// vLLM's admission on the prompt alone does once long sequences outgrow the cache.
TEST(EngineStacks, NoEvictAdmissionNeverPreempts) {
  Scenario s = test::serving_scenario("llama3-8b", "dgx-h100", 1, 1, 1, 1, 20000, 2000, "fp8", "fp8");
  ServeRequest request;
  request.requests = 120;
  request.rate_per_s = std::numeric_limits<double>::infinity();
  request.options.keep_occupancy = false;
  s.stack = catalog_stack("trtllm-v1");
  EXPECT_EQ(run_serve(s, request).summary.preemptions, 0);
  s.stack = catalog_stack("vllm-v1");
  EXPECT_GT(run_serve(s, request).summary.preemptions, 0);
}

}  // namespace
}  // namespace twinsim
