// Speculative decoding (models/speculative.hpp, sim/inference/speculative.hpp): the
// expected tokens per step by hand, the acceptance draws against that expectation, the
// serving loop with a pass cost of one second (worked out in the comments), and the
// static-batch prediction and memory of a draft model against their parts.
#include <gtest/gtest.h>

#include <random>

#include "models/param_count.hpp"
#include "scenario/errors.hpp"
#include "one_second_passes.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/kv_cache.hpp"
#include "sim/inference/serving.hpp"
#include "sim/inference/serving_report.hpp"
#include "sim/inference/speculative.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {
namespace {

SpeculativeDecoding ngram(int k, double alpha) {
  SpeculativeDecoding d;
  d.tokens = k;
  d.acceptance_rate = alpha;
  return d;
}

TEST(Speculative, TokensPerStepByHand) {
  // (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616
  EXPECT_NEAR(ngram(4, 0.8).tokens_per_step(), 3.3616, 1e-12);
  EXPECT_DOUBLE_EQ(ngram(4, 0).tokens_per_step(), 1);  // nothing accepted: the served model's own token
  EXPECT_DOUBLE_EQ(ngram(4, 1).tokens_per_step(), 5);  // everything: K + 1
}

TEST(Speculative, AcceptanceDrawsMeetTheExpectation) {
  std::mt19937_64 rng(7);
  const int draws = 200'000;
  double sum = 0;
  for (int i = 0; i < draws; ++i) {
    const std::int64_t a = accepted_proposals(4, 0.8, rng);
    ASSERT_GE(a, 0);
    ASSERT_LE(a, 4);
    sum += static_cast<double>(a);
  }
  // E[accepted] = tokens_per_step - 1 = 2.3616; the mean of 2e5 draws (sd about 1.5) within 0.02
  EXPECT_NEAR(sum / draws, 2.3616, 0.02);
  EXPECT_EQ(accepted_proposals(4, 0, rng), 0);
  EXPECT_EQ(accepted_proposals(4, 1, rng), 4);
}

using test::OneSecondPasses;

SchedulerLimits speculating(int k, double alpha) {
  SchedulerLimits l;
  l.speculative_tokens = k;
  l.acceptance_rate = alpha;
  return l;
}

TEST(Speculative, EveryProposalAcceptedFinishesInFewerSteps) {
  // prefill [0,1] samples token 1; K = 3 all accepted: tokens 2-5 by t = 2, 6-9 by t = 3
  std::vector<PassShape> log;
  const ServingResult r = run_serving({{0.0, 100, 9}}, 100, speculating(3, 1), 1, OneSecondPasses{&log});
  EXPECT_DOUBLE_EQ(r.times[0].first_token_s, 1.0);
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 3.0);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1].target.tokens, 4);   // the token and three proposals, verified together
  EXPECT_EQ(log[1].target.sampled, 4);  // every verified position has its logits
  EXPECT_EQ(log[1].draft_first.tokens, 1);  // what runs without speculation
  EXPECT_EQ(log[1].draft_next.tokens, 1);
  // the cache holds the prompt and tokens 1-8 (the last sampled one is never cached)
  EXPECT_EQ(log[0].draft_first.tokens, 100);  // a draft model prefills the prompt too
}

TEST(Speculative, NothingAcceptedIsPlainDecodingAndProposalsStopAtTheEnd) {
  // alpha 0: one token per step, as without speculation: tokens 2..5 at t = 2..5
  const ServingResult none = run_serving({{0.0, 100, 5}}, 100, speculating(3, 0), 1, OneSecondPasses{});
  EXPECT_DOUBLE_EQ(none.times[0].finish_s, 5.0);
  // output 7, all accepted: after token 1, 5 are left: 1 + 3 proposals (tokens 2-5), then
  // 2 left: 1 + 1 proposal (tokens 6-7), never past the request's end
  std::vector<PassShape> log;
  const ServingResult r = run_serving({{0.0, 100, 7}}, 100, speculating(3, 1), 1, OneSecondPasses{&log});
  EXPECT_DOUBLE_EQ(r.times[0].finish_s, 3.0);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1].target.tokens, 4);
  EXPECT_EQ(log[2].target.tokens, 2);
}

TEST(Speculative, TheServingDrawsYieldTheExpectedTokensPerStep) {
  // one long answer, K = 4 at 80%: the verify steps' tokens average (1 - 0.8^5) / 0.2 =
  // 3.3616 (a little less: the last steps propose fewer); 20,000 tokens, ~5,950 steps, the
  // mean's standard error about 0.02
  const ServingResult r = run_serving({{0.0, 16, 20'001}}, 2'000, speculating(4, 0.8), 1, OneSecondPasses{});
  ASSERT_GT(r.verify_steps, 5'000);
  EXPECT_EQ(r.verified_tokens, 20'000);  // every token after the first came from a verify step
  EXPECT_NEAR(static_cast<double>(r.verified_tokens) / static_cast<double>(r.verify_steps), 3.3616, 0.06);
}

Scenario llama3_8b_with(const std::string& speculative) {
  return load_scenario_text(
      "model: llama3-8b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\n"
      "inference: {prompt_len: 512, output_len: 129, batch: 8" +
      (speculative.empty() ? std::string() : ", speculative: " + speculative) + "}\nplan: {tp: 1}\n");
}

TEST(Speculative, StaticBatchStepsAreOutputOverTokensPerStep) {
  const InferencePrediction plain = predict_inference(llama3_8b_with(""));
  // alpha 0.8, K 4: E = 3.3616; 128 later tokens take ceil(128 / 3.3616) = 39 verify steps
  const InferencePrediction p =
      predict_inference(llama3_8b_with("{method: ngram, tokens: 4, acceptance_rate: 0.8}"));
  EXPECT_EQ(p.decode_passes, 39);
  EXPECT_DOUBLE_EQ(p.ttft_s, plain.ttft_s);  // an n-gram proposer adds nothing to the prefill
  // a verify step reads the weights once, as a decode step: it costs more, but less than E steps
  EXPECT_GT(p.first_decode.latency_s(), plain.first_decode.latency_s());
  EXPECT_LT(p.tpot_s, plain.tpot_s);
  // alpha 0: every step yields one token, each dearer than a plain one
  const InferencePrediction none =
      predict_inference(llama3_8b_with("{method: ngram, tokens: 4, acceptance_rate: 0}"));
  EXPECT_EQ(none.decode_passes, 128);
  EXPECT_GT(none.tpot_s, plain.tpot_s);
}

TEST(Speculative, ADraftModelRunsKPassesAndIsHeldInMemory) {
  const Scenario s = llama3_8b_with("{method: draft, draft_model: llama3.2-1b, tokens: 4, acceptance_rate: 0.8}");
  const InferencePrediction p = predict_inference(s);
  const Scenario d = draft_scenario(s);
  const ServingCostModel draft(d);
  const ServingCostModel target(s);
  // the first step: the served model's verify pass, then the draft's first pass and 3 more
  const PassShape step = speculative_decode_pass(8, 513, 4, 0);
  const double draft_s = draft.cost(decode_shape(8, 513)).latency_s() + 3 * draft.cost(decode_shape(8, 514)).latency_s();
  EXPECT_NEAR(p.first_draft_s, draft_s, 1e-15);
  EXPECT_NEAR(p.first_decode.latency_s(), target.cost(step.target).latency_s() + draft_s, 1e-15);
  // the prefill: both models, in turn
  EXPECT_NEAR(p.ttft_s, target.cost(prefill_shape(8, 512)).latency_s() + draft.cost(prefill_shape(8, 512)).latency_s(),
              1e-15);
  // memory: the draft's 16-bit weights (1,235,814,400 x 2 B) and its KV cache, 16 layers x
  // 2 x 8 heads x 64 x 2 B = 32,768 B a token, for 8 x 641 tokens
  const MemoryReport plain_memory = predict_memory(llama3_8b_with(""));
  const MemoryReport memory = predict_memory(s);
  EXPECT_EQ(memory.stages[0].breakdown.params - plain_memory.stages[0].breakdown.params, 1'235'814'400LL * 2);
  EXPECT_EQ(memory.stages[0].breakdown.kv_cache - plain_memory.stages[0].breakdown.kv_cache, 32'768LL * 8 * 641);
  EXPECT_EQ(p.kv.stages[0].bytes_per_token - predict_inference(llama3_8b_with("")).kv.stages[0].bytes_per_token, 32'768);
}

TEST(Speculative, ServeRunsRepeatExactlyAndBeatPlainDecoding) {
  const Scenario plain = llama3_8b_with("");
  const Scenario spec = llama3_8b_with("{method: draft, draft_model: llama3.2-1b, tokens: 4, acceptance_rate: 0.8}");
  const auto requests = poisson_requests(100, 4, 1, 512, 129);
  const ServingSummary a = summarize(simulate_serving(spec, requests));
  const ServingSummary b = summarize(simulate_serving(spec, requests));
  EXPECT_EQ(a.tpot.p50_s, b.tpot.p50_s);  // the acceptance draws are seeded
  EXPECT_LT(a.tpot.p50_s, summarize(simulate_serving(plain, requests)).tpot.p50_s);
}

TEST(Speculative, BadSettingsAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"{method: draft, tokens: 4, acceptance_rate: 0.8}", "inference.speculative.draft_model: is required with"},
      {"{method: ngram, draft_model: llama3.2-1b, tokens: 4, acceptance_rate: 0.8}",
       "inference.speculative.draft_model: needs inference.speculative.method=draft"},
      {"{method: draft, draft_model: llama2-7b, tokens: 4, acceptance_rate: 0.8}",
       "inference.speculative.draft_model.vocab=32000 must equal model.vocab=128256"},
      {"{tokens: 0, acceptance_rate: 0.8}", "inference.speculative.tokens=0 must be at least 1"},
      {"{tokens: 4}", "inference.speculative.acceptance_rate: is required"},
      {"{tokens: 4, acceptance_rate: 1.5}", "inference.speculative.acceptance_rate=1.5"},
      {"{tokens: 4, acceptance_rate: 0.5, lookahead: 2}", "inference.speculative.lookahead"},
  };
  test::expect_refused(llama3_8b_with, cases);
  test::expect_refused(
      [](const std::string& plan) {
        return load_scenario_text("model: llama3-8b\ncluster: {preset: dgx-h100, gpus_per_node: 2, nodes: 1}\n"
                                  "inference: {prompt_len: 512, speculative: {tokens: 4, acceptance_rate: 0.8}}\n"
                                  "plan: " + plan + "\n");
      },
      {{"{tp: 1, pp: 2}", "inference.speculative: is modelled without pipeline parallelism (plan.pp=2, needs 1)"}});
}

}  // namespace
}  // namespace twinsim
