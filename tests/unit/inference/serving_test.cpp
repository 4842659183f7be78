// The continuous-batching loop with a pass cost that is easy to follow by hand (every
// pass takes one second per stage), so each expected time below is worked out in the
// comment next to it; then the real scenario path end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "one_second_passes.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"

namespace twinsim {
namespace {

// Every pass: `per_stage` seconds on each of `stages` stages, records what it ran.
struct UnitCost {
  int stages = 1;
  std::vector<IterationShape>* log = nullptr;
  IterationCost operator()(const PassShape& pass) const {
    if (log) log->push_back(pass.target);
    IterationCost c;
    c.stage_s.assign(stages, 1.0);
    return c;
  }
};

SchedulerLimits limits(std::int64_t budget = 2048, std::int64_t max_seqs = 256) {
  SchedulerLimits l;
  l.block_tokens = 16;
  l.max_batched_tokens = budget;
  l.max_sequences = max_seqs;
  return l;
}

TEST(Serving, OneRequestPrefillsThenDecodes) {
  // prefill pass [0,1] samples token 1; four decode passes end at 2,3,4,5
  const ServingResult r = run_serving({{0.0, 100, 5}}, 100, limits(), 1, UnitCost{});
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 5.0);
  const ServingSummary s = summarize(r);
  EXPECT_DOUBLE_EQ(s.ttft.p50_s, 1.0);
  EXPECT_DOUBLE_EQ(s.tpot.p50_s, 1.0);
  EXPECT_EQ(r.passes, 5);
}

TEST(Serving, LongPromptsAreChunkedToTheTokenBudget) {
  // 5000 tokens with a budget of 2048: chunks 2048, 2048, 904; the third samples at t=3
  std::vector<IterationShape> log;
  const ServingResult r = run_serving({{0.0, 5000, 2}}, 1000, limits(), 1, UnitCost{1, &log});
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].tokens, 2048);
  EXPECT_EQ(log[1].tokens, 2048);
  EXPECT_EQ(log[2].tokens, 904);
  EXPECT_EQ(log[0].sampled, 0);
  EXPECT_EQ(log[2].sampled, 1);
  EXPECT_DOUBLE_EQ(log[2].attention_pairs, 904.0 * (4096 + 904));  // the chunk's queries x every key up to its end
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 3.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 4.0);
}

TEST(Serving, ANewPromptJoinsTheRunningDecodes) {
  // r0 prefills in [0,1]; r1 (arrived 0.5) waits, then joins r0's decode in pass [1,2]:
  // one pass of 1 + 10 tokens. r1's first token at 2 (TTFT 1.5).
  std::vector<IterationShape> log;
  const ServingResult r = run_serving({{0.0, 10, 3}, {0.5, 10, 3}}, 100, limits(), 1, UnitCost{1, &log});
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[1].tokens, 11);
  EXPECT_EQ(log[1].sequences, 2);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 2.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 3.0);
  EXPECT_DOUBLE_EQ(r.times[1].finish_s, 4.0);
}

TEST(Serving, PrefillFirstRunsANewPromptInAPassOfItsOwn) {
  // SGLang's policy: r0 prefills in [0,1]; r1 (arrived 0.5) prefills alone in [1,2] while
  // r0's decode waits (10 tokens, 1 sequence, not 11 and 2 as above); both decode in [2,3]
  // and [3,4]. r0 finishes at 4, not 3; its second token's gap is 2 s.
  std::vector<IterationShape> log;
  SchedulerLimits l = limits();
  l.prefill_first = true;
  l.record_itl = true;
  const ServingResult r = run_serving({{0.0, 10, 3}, {0.5, 10, 3}}, 100, l, 1, UnitCost{1, &log});
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[1].tokens, 10);
  EXPECT_EQ(log[1].sequences, 1);
  EXPECT_EQ(log[2].tokens, 2);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 2.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 4.0);
  EXPECT_DOUBLE_EQ(r.times[1].finish_s, 4.0);
  EXPECT_DOUBLE_EQ(*std::max_element(r.itl_s.begin(), r.itl_s.end()), 2.0);
  EXPECT_TRUE(catalog_stack("sglang").serving_prefill_first);
  EXPECT_FALSE(catalog_stack("vllm-v1").serving_prefill_first);
}

TEST(Serving, AnOverlapSchedulerTakesAnArrivalOnePassLate) {
  // SGLang's overlap loop formed pass [1,2] when pass [0,1] started, so r1 (arrived 0.5)
  // is seen then and joins pass [2,3]: r0 decodes alone in [1,2]; r1's first token at 3
  // (TTFT 2.5, one pass more than ANewPromptJoinsTheRunningDecodes' 1.5). r2 arrives at 7.5
  // on an idle engine (nothing in flight) and prefills at once: first token at 8.5.
  std::vector<IterationShape> log;
  SchedulerLimits l = limits();
  l.overlap_pickup = true;
  const ServingResult r = run_serving({{0.0, 10, 3}, {0.5, 10, 3}, {7.5, 10, 1}}, 100, l, 1, UnitCost{1, &log});
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[1].tokens, 1);
  EXPECT_EQ(log[2].tokens, 11);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 3.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 3.0);
  EXPECT_DOUBLE_EQ(r.times[1].finish_s, 5.0);
  EXPECT_DOUBLE_EQ(r.times[2].first_token_s, 8.5);
  EXPECT_TRUE(catalog_stack("sglang").serving_async);  // simulate_serving's overlap_pickup
  EXPECT_FALSE(catalog_stack("vllm-v1").serving_async);
}

TEST(Serving, RunningOutOfBlocksPreemptsTheNewestAndRecomputesIt) {
  // 3 blocks of 16. Both prompts (16 tokens, 1 block each) are admitted at t=0. At the
  // third pass r0 needs a second block for its 17th token (takes the last one); at the
  // fourth r1 needs one too, none is free, so r1 (the newest) is preempted and waits.
  const std::vector<Request> reqs{{0.0, 16, 20}, {0.0, 16, 20}};
  const ServingResult r = run_serving(reqs, 3, limits(), 1, UnitCost{});
  EXPECT_EQ(r.times[0].preemptions, 0);
  EXPECT_GE(r.times[1].preemptions, 1);
  for (const OccupancySample& o : r.occupancy) EXPECT_LE(o.used_blocks, 3);
  // r0 runs undisturbed: prefill [0,1], 19 decodes
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 20.0);
  EXPECT_GT(r.times[1].finish_s, 20.0);
  EXPECT_GT(r.times[1].first_token_s, 0.0);
}

TEST(Serving, MaxSequencesCapsTheBatch) {
  std::vector<IterationShape> log;
  const std::vector<Request> reqs(5, Request{0.0, 4, 2});
  run_serving(reqs, 100, limits(2048, 2), 1, UnitCost{1, &log});
  for (const IterationShape& s : log) EXPECT_LE(s.sequences, 2);
}

TEST(Serving, PipelineStagesOverlapTwoEngines) {
  // pp=2: r0 goes to engine 0, r1 to engine 1. Engine 0's prefill: stage 0 [0,1], stage 1
  // [1,2]; engine 1's: stage 0 [1,2] (free at 1... it is ready at 0 but stage 0 is busy), stage 1 [2,3].
  const ServingResult r = run_serving({{0.0, 8, 1}, {0.0, 8, 1}}, 100, limits(), 2, UnitCost{2});
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 2.0);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 3.0);
}

// The client's --max-concurrency: three requests of 10 + 3 tokens all due at t = 0.
// One slot: r0 prefills [0,1] and decodes to 3; r1 is sent at 3 (prefill [3,4], done at 6);
// r2 at 6, done at 9. Each TTFT counts from the send (1 s), as vLLM's client times it.
TEST(ClientConcurrency, ARequestWaitsForAFreeSlot) {
  const std::vector<Request> due = {{0.0, 10, 3}, {0.0, 10, 3}, {0.0, 10, 3}};
  const ServingResult one = run_serving(due, 100, limits(), 1, UnitCost{}, true, {}, 1);
  EXPECT_DOUBLE_EQ(one.requests[1].arrival_s, 3.0);
  EXPECT_DOUBLE_EQ(one.requests[2].arrival_s, 6.0);
  EXPECT_DOUBLE_EQ(one.times[2].first_token_s, 7.0);
  EXPECT_DOUBLE_EQ(one.times[2].finish_s, 9.0);
  EXPECT_DOUBLE_EQ(summarize(one).ttft.p50_s, 1.0);
  // two slots: r0 and r1 together in [0,3], r2 sent at 3 and done at 6
  const ServingResult two = run_serving(due, 100, limits(), 1, UnitCost{}, true, {}, 2);
  EXPECT_DOUBLE_EQ(two.times[1].finish_s, 3.0);
  EXPECT_DOUBLE_EQ(two.requests[2].arrival_s, 3.0);
  EXPECT_DOUBLE_EQ(two.times[2].finish_s, 6.0);
  // no cap: all three run together and finish at 3
  const ServingResult all = run_serving(due, 100, limits(), 1, UnitCost{});
  EXPECT_DOUBLE_EQ(all.times[2].finish_s, 3.0);
}

// The frontend's request path (stack serving_request_us; 0.25 s here, one-second passes): r0
// sent at 0 reaches the scheduler at 0.25, prefills in [0.25, 1.25] (first token 1.25, TTFT
// 1.25) and decodes to 3.25; with one client slot r1 is sent at 3.25, reaches the scheduler at
// 3.5 and has its first token at 4.5: TTFT 1.25 as well, counted from its send.
TEST(ClientConcurrency, TheFrontendsRequestPathDelaysTheScheduler) {
  SchedulerLimits l = limits();
  l.request_path_s = 0.25;
  const ServingResult r = run_serving({{0.0, 10, 3}, {0.0, 10, 3}}, 100, l, 1, UnitCost{}, true, {}, 1);
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 1.25);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 3.25);
  EXPECT_DOUBLE_EQ(r.requests[1].arrival_s, 3.25);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 4.5);
  EXPECT_DOUBLE_EQ(summarize(r).ttft.p50_s, 1.25);  // 1.0 without the path
  // the lockstep loop (expert-parallel ranks) takes the same path: first token at 0.25 + 1
  const LockstepCostFn one_second = [](const std::vector<IterationShape>&) { return 1.0; };
  const ServingResult ep = run_lockstep_serving({{0.0, 10, 2}}, 100, l, one_second, true, {});
  EXPECT_DOUBLE_EQ(ep.times[0].first_token_s, 1.25);
  EXPECT_DOUBLE_EQ(ep.requests[0].arrival_s, 0.0);
  // the key reaches the scheduler from a stack
  EXPECT_GT(catalog_stack("vllm-v1").serving_request_s, 0.0);
  EXPECT_GT(catalog_stack("sglang").serving_request_s, 0.0);
  EXPECT_EQ(catalog_stack("trtllm").serving_request_s, 0.0);
}

// The path's per-prompt-token part (stack serving_request_token_us; 0.01 s a token here, with
// 0.25 s a request, one-second passes, one client slot): r0 (10 tokens) sent at 0 reaches the
// scheduler at 0.25 + 10 x 0.01 = 0.35, first token 1.35, done 3.35; r1 (30 tokens) sent at 3.35
// reaches it at 3.35 + 0.25 + 0.30 = 3.90, first token 4.90: TTFT 1.55, the longer prompt's.
TEST(ClientConcurrency, TheFrontendsPathGrowsWithThePrompt) {
  SchedulerLimits l = limits();
  l.request_path_s = 0.25;
  l.request_token_s = 0.01;
  const ServingResult r = run_serving({{0.0, 10, 3}, {0.0, 30, 3}}, 100, l, 1, UnitCost{}, true, {}, 1);
  EXPECT_NEAR(r.times[0].first_token_s, 1.35, 1e-12);
  EXPECT_NEAR(r.requests[1].arrival_s, 3.35, 1e-12);
  EXPECT_NEAR(r.times[1].first_token_s, 4.9, 1e-12);
  EXPECT_NEAR(r.times[1].first_token_s - r.requests[1].arrival_s, 1.55, 1e-12);
  // the lockstep loop takes the same path: 0.25 + 30 x 0.01 before its one-second pass
  const LockstepCostFn one_second = [](const std::vector<IterationShape>&) { return 1.0; };
  const ServingResult ep = run_lockstep_serving({{0.0, 30, 2}}, 100, l, one_second, true, {});
  EXPECT_NEAR(ep.times[0].first_token_s, 1.55, 1e-12);
  EXPECT_DOUBLE_EQ(ep.requests[0].arrival_s, 0.0);
}

// The key from a scenario to the scheduler: serving_request_token_us 2 on a 1,000-token prompt
// is 2 ms more before the scheduler sees it (the pass is the same), 4 ms on a host at twice an
// x86 server's CPU time (cluster.host.cpu_time_scale). No preset sets it (opt-in).
TEST(ClientConcurrency, ThePerTokenPathComesFromTheStack) {
  const std::string text =
      "model: llama3-8b\ncluster: dgx-h100\ninference: {prompt_len: 1000, output_len: 2, batch: "
      "1}\nplan: {tp: 1}\nstack: {preset: vllm-v1, serving_request_token_us: 2}\n";
  const Scenario with = load_scenario_text(text);
  EXPECT_DOUBLE_EQ(with.stack.serving_request_token_s, 2e-6);
  Scenario without = with;
  without.stack.serving_request_token_s = 0;
  Scenario slow_host = with, slow_host_without = without;
  slow_host.cluster.host.cpu_time_scale = slow_host_without.cluster.host.cpu_time_scale = 2;
  const std::vector<Request> one = {{0.0, 1000, 2}};
  auto first_token_s = [&](const Scenario& s) { return simulate_serving(s, one).times[0].first_token_s; };
  EXPECT_NEAR(first_token_s(with) - first_token_s(without), 2e-3, 1e-12);
  EXPECT_NEAR(first_token_s(slow_host) - first_token_s(slow_host_without), 4e-3, 1e-12);
  EXPECT_EQ(catalog_stack("vllm-v1").serving_request_token_s, 0.0);
  EXPECT_EQ(catalog_stack("sglang").serving_request_token_s, 0.0);
}

// A request due later than the slot frees goes at its own time: r0 (10 + 2 tokens) is done at
// 2, r1 is due at 5, so it is sent at 5, not 2.
TEST(ClientConcurrency, ALaterArrivalKeepsItsTime) {
  const ServingResult r = run_serving({{0.0, 10, 2}, {5.0, 10, 2}}, 100, limits(), 1, UnitCost{}, true, {}, 1);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 2.0);
  EXPECT_DOUBLE_EQ(r.requests[1].arrival_s, 5.0);
  EXPECT_DOUBLE_EQ(r.times[1].finish_s, 7.0);
}

// Two ranks of one expert-parallel group, a pass costing its largest rank's tokens / 10 s.
// r0 (100 + 2 tokens) goes to rank 0, r1 (10 + 2) to rank 1: the first pass prefills both
// and takes 100 / 10 = 10 s, so r1's first token comes at 10 (alone it would at 1); the
// decode pass (one token each) takes 0.1 s: both finish at 10.1.
TEST(Serving, ExpertParallelRanksRunInLockstep) {
  const LockstepCostFn largest = [](const std::vector<IterationShape>& ranks) {
    std::int64_t most = 0;
    for (const IterationShape& r : ranks) most = std::max(most, r.tokens);
    return static_cast<double>(most) / 10;
  };
  ReplicaSet two;
  two.replicas = 2, two.router = Router::round_robin;
  const ServingResult r = run_lockstep_serving({{0.0, 100, 2}, {0.0, 10, 2}}, 100, limits(), largest, true, two);
  EXPECT_DOUBLE_EQ(r.times[1].first_token_s, 10.0);
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 10.0);
  EXPECT_DOUBLE_EQ(r.times[1].finish_s, 10.1);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 10.1);
  EXPECT_EQ(r.passes, 2);
  // a request due later waits for it: the group idles from 10.1 to 20
  const ServingResult late = run_lockstep_serving({{0.0, 10, 2}, {20.0, 10, 2}}, 100, limits(), largest, true, two);
  EXPECT_DOUBLE_EQ(late.times[1].first_token_s, 21.0);
}

// TensorRT-LLM's idle fetch (stack serving_idle_fetch_one): two ranks, round robin, four
// requests of 10 prompt + 3 output tokens all due at 0, a pass costing its largest rank's
// tokens / 10 s (the lockstep maximum).
//  all at once: rank 0 holds r0, r2 and rank 1 r1, r3; pass 1 prefills 20 tokens on each (2 s),
//    passes 2 and 3 decode 2 tokens a rank (0.2 s each): 1 prompt-bearing pass of 3, done at 2.4.
//  one first: pass 1 holds r0 alone on rank 0 (10 tokens, 1 s); the fetch at 1 s takes r1, r2,
//    r3 (round robin from rank 1: r1 -> 1, r2 -> 0, r3 -> 1); pass 2 carries r0's decode and r2's
//    prompt on rank 0 (11 tokens) and r1's and r3's prompts on rank 1 (20): 2 s, to 3; pass 3
//    decodes 2 tokens a rank (0.2 s; r0's third token, it finishes at 3.2), pass 4 rank 0's r2
//    and rank 1's two (0.2 s): 2 prompt-bearing passes of 4, done at 3.4.
TEST(Serving, AnIdleFetchTakesOneRequestAndItsRankRunsAhead) {
  int prompt_passes = 0;
  const LockstepCostFn largest = [&](const std::vector<IterationShape>& ranks) {
    std::int64_t most = 0;
    bool prompt = false;
    for (const IterationShape& r : ranks) most = std::max(most, r.tokens), prompt = prompt || r.tokens > r.sequences;
    prompt_passes += prompt ? 1 : 0;
    return static_cast<double>(most) / 10;
  };
  ReplicaSet two;
  two.replicas = 2, two.router = Router::round_robin;
  const std::vector<Request> four(4, Request{0.0, 10, 3});
  SchedulerLimits l = limits();
  const ServingResult all = run_lockstep_serving(four, 100, l, largest, true, two);
  EXPECT_EQ(prompt_passes, 1);
  EXPECT_EQ(all.passes, 3);
  EXPECT_NEAR(all.times[3].finish_s, 2.4, 1e-12);
  prompt_passes = 0;
  l.idle_fetch_one = true;
  const ServingResult one = run_lockstep_serving(four, 100, l, largest, true, two);
  EXPECT_EQ(prompt_passes, 2);
  EXPECT_EQ(one.passes, 4);
  EXPECT_DOUBLE_EQ(one.times[0].first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(one.times[1].first_token_s, 3.0);
  EXPECT_DOUBLE_EQ(one.times[2].first_token_s, 3.0);
  EXPECT_NEAR(one.times[0].finish_s, 3.2, 1e-12);
  EXPECT_NEAR(one.times[3].finish_s, 3.4, 1e-12);
  // TensorRT-LLM 1.0's stack sets it; vLLM's does not
  EXPECT_TRUE(catalog_stack("trtllm-v1").serving_idle_fetch_one);
  EXPECT_FALSE(catalog_stack("vllm-v1").serving_idle_fetch_one);
}

TEST(Serving, ARequestLargerThanTheCacheIsRefused) {
  EXPECT_THROW(run_serving({{0.0, 100, 100}}, 5, limits(), 1, UnitCost{}), std::invalid_argument);
}

TEST(Arrivals, SeededPoissonRepeatsAndHasTheRightMean) {
  const auto a = poisson_requests(20000, 4.0, 7, 128, 16);
  const auto b = poisson_requests(20000, 4.0, 7, 128, 16);
  const auto c = poisson_requests(20000, 4.0, 8, 128, 16);
  ASSERT_EQ(a.size(), 20000u);
  EXPECT_EQ(a.back().arrival_s, b.back().arrival_s);
  EXPECT_NE(a.back().arrival_s, c.back().arrival_s);
  // mean gap 1/rate = 0.25 s; the standard error over 20000 gaps is 0.25/sqrt(20000) = 0.0018
  EXPECT_NEAR(a.back().arrival_s / 20000, 0.25, 4 * 0.0018);
}

TEST(Arrivals, TraceFileColumnsByName) {
  const auto r = parse_request_trace("prompt_len,arrival_s,output_len\n100,0.5,10\n# comment\n50,0.1,3\n", "t.csv");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0].arrival_s, 0.1);  // sorted by arrival
  EXPECT_EQ(r[0].prompt_len, 50);
  EXPECT_EQ(r[1].output_len, 10);
  EXPECT_THROW(parse_request_trace("arrival_s,prompt_len\n0,1\n", "t.csv"), RequestTraceError);
  EXPECT_THROW(parse_request_trace("arrival_s,prompt_len,output_len\n-1,5,5\n", "t.csv"), RequestTraceError);
  EXPECT_THROW(parse_request_trace("arrival_s,prompt_len,output_len\n0,5.5,5\n", "t.csv"), RequestTraceError);
  EXPECT_THROW(parse_request_trace("arrival_s,prompt_len,output_len\n0,abc,5\n", "t.csv"), RequestTraceError);
  // a count past 2^40 once became an integer by undefined behaviour (tests/fuzz/fuzz_csv.cpp)
  try {
    parse_request_trace("arrival_s,prompt_len,output_len\n0,1e110,5\n", "t.csv");
    ADD_FAILURE() << "accepted";
  } catch (const RequestTraceError& e) {
    EXPECT_EQ(std::string(e.what()), "t.csv:2: prompt_len=1e110 must be a whole number from 1 to 1099511627776 (2^40)");
  }
}

// numpy.percentile(..., method="linear") gives these
TEST(Report, PercentilesInterpolateLikeNumpy) {
  EXPECT_DOUBLE_EQ(latency_percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(latency_percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90), 9.1);
  EXPECT_DOUBLE_EQ(latency_percentile({5}, 99), 5);
}

TEST(Serving, ScenarioRunsRepeatExactlyAndWriteOccupancy) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 256, 64);
  const auto reqs = poisson_requests(300, 20.0, 1, 256, 64);
  const ServingResult a = simulate_serving(s, reqs);
  const ServingResult b = simulate_serving(s, reqs);
  ASSERT_EQ(a.times.size(), 300u);
  for (std::size_t i = 0; i < a.times.size(); ++i) EXPECT_EQ(a.times[i].finish_s, b.times[i].finish_s);
  const ServingSummary sum = summarize(a);
  EXPECT_GT(sum.ttft.p99_s, sum.ttft.p50_s * 0.999);
  EXPECT_GT(sum.tpot.p50_s, 0.005);  // at least the bandwidth floor of reading 13.5 GB
  EXPECT_GT(sum.mean_kv_occupancy, 0);
  std::ostringstream csv;
  write_occupancy_csv(csv, a);
  const std::string text = csv.str();
  EXPECT_EQ(text.rfind("time_s,used_blocks,total_blocks,occupancy,running,waiting\n", 0), 0u);
  EXPECT_EQ(static_cast<std::int64_t>(std::count(text.begin(), text.end(), '\n')), a.passes + 1);
}

// `serve --requests-csv`: a row per request in request order, whose TTFT column is the
// first token less the arrival and averages to the summary's mean TTFT (rows printed to 1 us).
TEST(Serving, RequestsCsvGivesEachRequestsTtftInOrder) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 256, 64);
  const auto reqs = poisson_requests(40, 20.0, 1, 256, 64);
  const ServingResult r = simulate_serving(s, reqs);
  std::ostringstream csv;
  write_requests_csv(csv, r);
  std::istringstream in(csv.str());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "request,arrival_s,prompt_len,output_len,first_token_s,finish_s,ttft_s,preemptions");
  std::size_t rows = 0;
  double ttft_sum = 0, last_arrival = -1;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string cell;
    std::vector<double> v;
    while (std::getline(f, cell, ',')) v.push_back(std::stod(cell));
    ASSERT_EQ(v.size(), 8u);
    EXPECT_EQ(v[0], static_cast<double>(rows));
    EXPECT_NEAR(v[1], reqs[rows].arrival_s, 1e-6);
    EXPECT_GE(v[1], last_arrival);  // Poisson arrivals, in request order
    EXPECT_NEAR(v[6], v[4] - v[1], 2e-6);
    EXPECT_GT(v[5], v[4]);  // 64 output tokens: the last comes after the first
    last_arrival = v[1];
    ttft_sum += v[6];
    ++rows;
  }
  EXPECT_EQ(rows, 40u);
  EXPECT_NEAR(ttft_sum / 40, summarize(r).ttft.mean_s, 1e-6);
}

// The occupancy summary kept as the loop runs (no sample per pass unless asked) gives the
// time-weighted mean and the peak that the per-pass samples give, each sample holding
// until the next pass starts and the last until the last request finishes.
TEST(Serving, StreamedOccupancyEqualsTheSamples) {
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 256, 64);
  const auto reqs = poisson_requests(300, 20.0, 1, 256, 64);
  ServeOptions lean;
  lean.keep_occupancy = false;
  const ServingResult kept = simulate_serving(s, reqs);
  const ServingResult streamed = simulate_serving(s, reqs, lean);
  EXPECT_TRUE(streamed.occupancy.empty());
  ASSERT_EQ(static_cast<std::int64_t>(kept.occupancy.size()), kept.passes);
  double last_finish = 0;
  for (const RequestTimes& t : kept.times) last_finish = std::max(last_finish, t.finish_s);
  double weighted = 0, peak = 0;
  for (std::size_t i = 0; i < kept.occupancy.size(); ++i) {
    const double until = i + 1 < kept.occupancy.size() ? kept.occupancy[i + 1].time_s : last_finish;
    const double share = static_cast<double>(kept.occupancy[i].used_blocks) / kept.total_blocks;
    weighted += share * (until - kept.occupancy[i].time_s);
    peak = std::max(peak, share);
  }
  const double mean = weighted / (last_finish - kept.occupancy.front().time_s);
  const ServingSummary sum = summarize(streamed);
  EXPECT_NEAR(sum.mean_kv_occupancy, mean, 1e-12 * mean);
  EXPECT_EQ(sum.peak_kv_occupancy, peak);
  EXPECT_GT(peak, sum.mean_kv_occupancy);
}

// Requests needing more sequence steps than the budget are refused before simulating,
// naming the flag; the count is every output token plus every prefill chunk.
TEST(Serving, WorkBeyondTheBudgetIsRefusedUpFront) {
  SchedulerLimits l = limits(100);
  EXPECT_EQ(serving_sequence_steps({{0.0, 250, 7}, {1.0, 100, 1}}, l), 7 + 3 + 1 + 1);  // ceil(250/100) = 3
  const Scenario s = test::serving_scenario("llama2-7b", "dgx-a100-80gb", 1, 1, 1, 1, 256, 64);
  ServeOptions o;
  o.max_sequence_steps = 1000;
  const auto reqs = poisson_requests(20, 20.0, 1, 256, 64);  // 20 x (64 + 1) = 1,300 steps
  try {
    simulate_serving(s, reqs, o);
    FAIL() << "not refused";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key, "--max-sequence-steps");
    EXPECT_NE(std::string(e.what()).find("1300 sequence steps"), std::string::npos) << e.what();
  }
  o.max_sequence_steps = 1300;
  EXPECT_EQ(simulate_serving(s, reqs, o).times.size(), 20u);
}

TEST(PrefixCache, AHitComputesOnlyTheUncachedTokens) {
  // prompt 100 of which 64 (4 whole blocks) are cached: the prefill pass computes 36 tokens
  // against 100 keys; the sequence's own blocks cover 36 + 4 more tokens (4 passes of decode
  // cache tokens 101..103 + the first sampled): ceil((36 + 3) / 16) = 3 blocks of its own
  std::vector<IterationShape> log;
  Request r{0.0, 100, 5};
  r.cached_prefix = 64;
  const ServingResult out = run_serving({r}, 100, limits(), 1, UnitCost{1, &log});
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log[0].tokens, 36);
  EXPECT_DOUBLE_EQ(log[0].attention_pairs, 36.0 * 100);
  EXPECT_EQ(log[0].kv_read_tokens, 100);
  EXPECT_DOUBLE_EQ(out.times[0].first_token_s, 1.0);
  std::int64_t most = 0;
  for (const OccupancySample& o : out.occupancy) most = std::max(most, o.used_blocks);
  EXPECT_EQ(most, 3);
  // a cached prefix that is not whole blocks, or the whole prompt, is refused
  r.cached_prefix = 60;
  EXPECT_THROW(run_serving({r}, 100, limits(), 1, UnitCost{}), std::invalid_argument);
  r.cached_prefix = 112;
  EXPECT_THROW(run_serving({r}, 100, limits(), 1, UnitCost{}), std::invalid_argument);
}

TEST(PrefixCache, HitRateMarksASeededShareOfWholeBlocks) {
  std::vector<Request> reqs(1000, Request{0.0, 200, 4});
  const std::vector<Request> out = with_prefix_cache(reqs, 150, 0.25, 16, 7);
  int hits = 0;
  for (const Request& r : out) {
    if (r.cached_prefix == 0) continue;
    ++hits;
    EXPECT_EQ(r.cached_prefix, 144);  // 150 tokens -> 9 whole blocks of 16
  }
  EXPECT_NEAR(hits, 250, 45);  // binomial(1000, 0.25): sd 13.7, ~3.3 sd
  EXPECT_EQ(with_prefix_cache(reqs, 150, 0.25, 16, 7)[17].cached_prefix, out[17].cached_prefix);  // seeded
  // a short prompt keeps its last token to recompute: 20 tokens -> 16 cached at most
  EXPECT_EQ(with_prefix_cache({Request{0.0, 20, 1}}, 150, 1.0, 16, 7)[0].cached_prefix, 16);
  EXPECT_EQ(with_prefix_cache({Request{0.0, 16, 1}}, 150, 1.0, 16, 7)[0].cached_prefix, 0);
}

TEST(WindowedKvBlocks, WindowedLayersHoldOnlyTheirWindow) {
  SchedulerLimits l = limits();
  l.attention_window = 128;
  l.windowed_kv_share = 0.5;  // gpt-oss: every other layer windowed
  // 4096 tokens: half the bytes for all 4096, half for the last 128: 2112 tokens' worth
  EXPECT_EQ(l.blocks_for(4096), 2112 / 16);
  EXPECT_EQ(l.blocks_for(100), 7);  // inside the window: every layer holds every token
  l.windowed_kv_share = 0;
  EXPECT_EQ(l.blocks_for(4096), 256);
  // a 1000-token prompt holds ceil((500 + 64) / 16) = 36 blocks after its prefill
  l.windowed_kv_share = 0.5;
  const ServingResult r = run_serving({{0.0, 1000, 2}}, 100, l, 1, UnitCost{});
  std::int64_t most = 0;
  for (const OccupancySample& o : r.occupancy) most = std::max(most, o.used_blocks);
  EXPECT_EQ(most, 36);
  // and fits a cache of 40 blocks that could not hold 1000 tokens of every layer (63)
  EXPECT_NO_THROW(run_serving({{0.0, 1000, 2}}, 40, l, 1, UnitCost{}));
  l.windowed_kv_share = 0;
  EXPECT_THROW(run_serving({{0.0, 1000, 2}}, 40, l, 1, UnitCost{}), std::invalid_argument);
}

TEST(Serving, ReplicasBehindARouterEachHaveTheirOwnCacheAndStages) {
  // two 100-token prompts at t = 0, a 100-token budget per pass: one replica prefills them
  // one after the other (first tokens at 1 and 2), two take one each (both at 1)
  const std::vector<Request> two{{0.0, 100, 1}, {0.0, 100, 1}};
  const ServingResult one = run_serving(two, 100, limits(100), 1, UnitCost{});
  EXPECT_DOUBLE_EQ(one.times[1].first_token_s, 2.0);
  const ServingResult both = run_serving(two, 100, limits(100), 1, UnitCost{}, true, {2, Router::round_robin});
  EXPECT_DOUBLE_EQ(both.times[0].first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(both.times[1].first_token_s, 1.0);
  EXPECT_EQ(both.total_blocks, 200);  // the occupancy is over both caches
}

TEST(Serving, LeastLoadedSendsARequestWhereLessIsUnfinished) {
  // A (long answer) goes to replica 0, B (one token) to replica 1 and is done at t = 1; C
  // comes at t = 5. Round robin sends it to replica 0, where A's decode token shares the
  // 100-token budget: C's prompt takes two passes, [5,6] and [6,7]: TTFT 2. Least loaded
  // sends it to the idle replica 1: one pass, TTFT 1.
  const std::vector<Request> r{{0.0, 100, 50}, {0.0, 10, 1}, {5.0, 100, 1}};
  const ServingResult rr = run_serving(r, 100, limits(100), 1, UnitCost{}, true, {2, Router::round_robin});
  const ServingResult ll = run_serving(r, 100, limits(100), 1, UnitCost{}, true, {2, Router::least_loaded});
  EXPECT_DOUBLE_EQ(rr.times[2].first_token_s - 5.0, 2.0);
  EXPECT_DOUBLE_EQ(ll.times[2].first_token_s - 5.0, 1.0);
  Router parsed = Router::round_robin;
  EXPECT_TRUE(parse_router("least_loaded", parsed));
  EXPECT_EQ(parsed, Router::least_loaded);
  EXPECT_FALSE(parse_router("random", parsed));
}

using test::OneSecondPasses;

TEST(Serving, SwapPreemptionKeepsWhatWasComputed) {
  // As RunningOutOfBlocksPreemptsTheNewestAndRecomputesIt: 3 GPU blocks, two 16-token
  // prompts, one block each in the first pass; in the second r0 takes the last block for
  // its 17th token and r1, needing one too, is preempted with its first token sampled. With
  // 4 host blocks its one block goes to the host; when it is scheduled again that block
  // comes back and it decodes on (one token), where recompute prefills 16 + 1 tokens again.
  const std::vector<Request> reqs{{0.0, 16, 20}, {0.0, 16, 20}};
  SchedulerLimits swapping = limits();
  swapping.swap_blocks = 4;
  std::vector<PassShape> swap_log, recompute_log;
  const ServingResult swapped = run_serving(reqs, 3, swapping, 1, OneSecondPasses{&swap_log});
  run_serving(reqs, 3, limits(), 1, OneSecondPasses{&recompute_log});
  EXPECT_EQ(swapped.swapped_out_blocks, 1);
  EXPECT_EQ(swapped.swapped_in_blocks, 1);
  EXPECT_EQ(swapped.times[1].preemptions, 1);
  std::size_t out = 0, in = 0;
  for (std::size_t i = 0; i < swap_log.size(); ++i) {
    if (swap_log[i].swap_out_blocks > 0) out = i;
    if (swap_log[i].swap_in_blocks > 0) in = i;
  }
  EXPECT_EQ(out, 1u);  // the second pass
  ASSERT_GT(in, out);
  EXPECT_EQ(swap_log[in].target.sequences, 1);  // r0 is done; r1 alone
  EXPECT_EQ(swap_log[in].target.tokens, 1);     // a decode step: nothing recomputed
  // recompute: the pass that takes r1 back prefills its prompt and the tokens it had
  std::int64_t most = 0;
  for (std::size_t i = 2; i < recompute_log.size(); ++i) most = std::max(most, recompute_log[i].target.tokens);
  EXPECT_EQ(most, 16 + 1);
  // swapped, it needs no pass more than recompute does (it decodes on from where it was)
  EXPECT_LE(swap_log.size(), recompute_log.size());
}

TEST(Serving, SwapCopiesCostTheirBytesOverPcie) {
  // llama3-8b on one H100: 131,072 B of K,V a token, 16-token blocks of 2,097,152 B; the
  // DGX H100's host link: 52 GB/s d2h, 51 GB/s h2d (hardware/catalog/nodes/dgx-h100.yaml)
  const Scenario s = load_scenario_text("model: llama3-8b\ncluster: {preset: dgx-h100, nodes: 1, gpus_per_node: 1}\n"
                                        "inference: {prompt_len: 64}\nplan: {tp: 1}\n");
  const KvCapacity capacity = kv_capacity(s);
  ASSERT_EQ(capacity.stages[0].bytes_per_token * capacity.block_tokens, 2'097'152);
  PassShape pass;
  pass.swap_out_blocks = 3, pass.swap_in_blocks = 2;
  IterationCost c;
  c.stage_s = {0.010};
  const IterationCost with = with_swap_time(c, pass, capacity, s.cluster);
  EXPECT_NEAR(with.stage_s[0], 0.010 + 3 * 2'097'152 / 52e9 + 2 * 2'097'152 / 51e9, 1e-15);
  EXPECT_DOUBLE_EQ(with_swap_time(c, PassShape{}, capacity, s.cluster).stage_s[0], 0.010);
}

TEST(Serving, SwapSpaceNeedsTheHostSide) {
  Scenario s = load_scenario_text("model: tiny-gpt\ncluster: host\ninference: {prompt_len: 16, output_len: 4}\nplan: {}\n");
  s.cluster.host = HostSpec{};  // no host figures
  ServeOptions o;
  o.swap_space_bytes = 1 << 20;
  EXPECT_THROW(simulate_serving(s, {{0.0, 16, 4}}, o), ScenarioError);
}

}  // namespace
}  // namespace twinsim
