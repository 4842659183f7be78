// A static batch with a cached prompt prefix (inference.prefix_tokens): the prefill computes
// the rest of each prompt against the whole prompt, the decode is unchanged, and the cache
// holds the prefix once more. Figures derived by hand.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenario/load.hpp"
#include "serving_scenarios.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/iteration_ops.hpp"
#include "sim/inference/serve_run.hpp"
#include "sim/memory/memory_report.hpp"

namespace twinsim {
namespace {

TEST(PrefixCacheBatch, ThePrefillComputesTheUncachedTokensAgainstTheWholePrompt) {
  InferenceWorkload w;
  w.batch = 3, w.prompt_len = 10, w.prefix_tokens = 6;
  const IterationShape s = prompt_shape(w);
  EXPECT_EQ(s.tokens, 3 * 4);
  EXPECT_EQ(s.sequences, 3);
  EXPECT_EQ(s.sampled, 3);
  EXPECT_DOUBLE_EQ(s.attention_pairs, 3 * 4.0 * 10);  // 4 queries each against 10 keys (the rectangle)
  EXPECT_EQ(s.kv_read_tokens, 3 * 10);
  w.prefix_tokens = 0;  // no cache: the plain prefill
  const IterationShape plain = prompt_shape(w), reference = prefill_shape(3, 10);
  EXPECT_EQ(plain.tokens, reference.tokens);
  EXPECT_DOUBLE_EQ(plain.attention_pairs, reference.attention_pairs);
}

TEST(PrefixCacheBatch, TtftShrinksTheDecodeDoesNotAndTheCacheHoldsThePrefixOnce) {
  const Scenario plain = test::serving_scenario("llama3-8b", "dgx-h100", 1, 1, 1, 8, 4096, 64);
  const Scenario cached = load_scenario_text(
      "model: llama3-8b\ncluster: {preset: dgx-h100, gpus_per_node: 1, nodes: 1}\n"
      "inference: {prompt_len: 4096, output_len: 64, batch: 8, weight_dtype: fp16, kv_dtype: fp16, "
      "prefix_tokens: 3072}\nplan: {tp: 1, pp: 1}\nstack: none\n");  // as test::serving_scenario
  const InferencePrediction a = predict_inference(plain), b = predict_inference(cached);
  EXPECT_LT(b.ttft_s, 0.5 * a.ttft_s);  // a quarter of the tokens, attending to all 4096
  EXPECT_GT(b.ttft_s, 0.25 * a.ttft_s * 0.5);
  EXPECT_DOUBLE_EQ(b.tpot_s, a.tpot_s);
  // Llama-3-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per token
  const std::int64_t per_token = 131072;
  EXPECT_EQ(predict_memory(cached).breakdown.kv_cache - predict_memory(plain).breakdown.kv_cache, 3072 * per_token);
  EXPECT_EQ(predict_memory(plain).breakdown.kv_cache, 8 * (4096 + 64) * per_token);
}

TEST(PrefixCacheBatch, ServeTakesTheScenariosPrefixUnlessTheFlagGivesOne) {
  const std::string text =
      "model: llama3-8b\ncluster: dgx-h100\ninference: {prompt_len: 1024, output_len: 16, prefix_tokens: 768}\n"
      "plan: {tp: 1, pp: 1}\n";
  ServeRequest r;
  r.requests = 20, r.rate_per_s = 2;
  const ServeRun scenario_prefix = run_serve(load_scenario_text(text), r);
  EXPECT_EQ(scenario_prefix.json["cached_prompt_tokens"].get<std::int64_t>(), 20 * 768);  // every request a hit
  r.options.prefix_tokens = 512;  // --prefix-tokens 512
  EXPECT_EQ(run_serve(load_scenario_text(text), r).json["cached_prompt_tokens"].get<std::int64_t>(), 20 * 512);
  ServeRequest plain;
  plain.requests = 20, plain.rate_per_s = 2;
  const ServeRun none = run_serve(load_scenario_text(text, {"inference.prefix_tokens=0"}), plain);
  EXPECT_EQ(none.json["cached_prompt_tokens"].get<std::int64_t>(), 0);
}

TEST(PrefixCacheBatch, APrefixAsLongAsThePromptIsRefused) {
  EXPECT_THROW(load_scenario_text("model: llama3-8b\ncluster: dgx-h100\ninference: {prompt_len: 128, prefix_tokens: 128}\n"
                                  "plan: {tp: 1, pp: 1}\n"),
               ScenarioError);
}

}  // namespace
}  // namespace twinsim
