// The executor's serving check (exec/train/inference_run.cpp validate, which run_inference and
// `twinsim run` on an inference scenario run first): what it does not serve is refused with a
// ScenarioError naming the key, the value and the rule, so `twinsim run` exits 2. A table of
// each family: the key, a refused value, and an accepted control on the same plan.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "exec/train/inference_run.hpp"
#include "scenario/errors.hpp"
#include "scenario/load.hpp"

namespace twinsim::exec {
namespace {

// tiny-gpt serving 2 prompts of 16 tokens, 4 tokens out, on one rank in bf16.
InferenceConfig tiny_gpt_serving() {
  InferenceConfig c;
  c.model = catalog_model("tiny-gpt");
  c.workload.batch = 2;
  c.workload.prompt_len = 16;
  c.workload.output_len = 4;
  c.workload.weight_dtype = Dtype::bf16;
  return c;
}

struct ServingRefusal {
  std::function<void(InferenceConfig&)> accept, refuse;
  std::string key, value, rule_part;
};

std::vector<ServingRefusal> serving_refusals() {
  const auto none = [](InferenceConfig&) {};
  const auto moe_over_two = [](InferenceConfig& c) {
    c.model = catalog_model("tiny-moe");
    c.plan.dp = 2;
    c.plan.ep = 2;
  };
  return {
      {none, [](InferenceConfig& c) { c.plan.pp = 2; }, "plan.pp", "2", "tensor, data and expert parallelism"},
      {none, [](InferenceConfig& c) { c.plan.cp = 2; }, "plan.cp", "2", "tensor, data and expert parallelism"},
      // experts split over 2 replicas are served; the same plan on a dense model, or ep=4 over dp=2, is not
      {moe_over_two, [](InferenceConfig& c) { c.model = catalog_model("tiny-gpt"); }, "plan.ep", "2", "model.moe"},
      {moe_over_two, [](InferenceConfig& c) { c.plan.ep = 4; }, "plan.ep", "4", "must divide plan.dp=2"},
      {[](InferenceConfig& c) { c.workload.weight_dtype = Dtype::fp16; },
       [](InferenceConfig& c) { c.workload.weight_dtype = Dtype::fp8; }, "inference.weight_dtype", "fp8",
       "fp32, bf16, fp16"},
      {none, [](InferenceConfig& c) { c.decode_rounds = 0; }, "--decode-rounds", "0", "at least 1"},
      {none, [](InferenceConfig& c) { c.workload.batch = 0; }, "inference.batch", "0", "at least 1"},
      {none, [](InferenceConfig& c) { c.workload.output_len = 0; }, "inference.output_len", "0", "at least 1"},
      // a shared prefix of 15 of the 16 prompt tokens is served; the whole prompt is not
      {[](InferenceConfig& c) { c.workload.prefix_tokens = 15; },
       [](InferenceConfig& c) { c.workload.prefix_tokens = 16; }, "inference.prefix_tokens", "16",
       "less than inference.prompt_len=16"},
      {none, [](InferenceConfig& c) { c.workload.speculative = SpeculativeDecoding{}; }, "inference.speculative", "",
       "one token per step"},
      {none, [](InferenceConfig& c) { c.workload.disaggregation = Disaggregation{}; }, "inference.disaggregation", "",
       "same ranks"},
  };
}

TEST(ExecutorServingCheck, EveryRefusalNamesItsKeyValueAndRule) {
  for (const ServingRefusal& row : serving_refusals()) {
    SCOPED_TRACE(row.key + "=" + row.value);
    InferenceConfig c = tiny_gpt_serving();
    row.accept(c);
    EXPECT_NO_THROW(validate(c));
    row.refuse(c);
    try {
      validate(c);
      ADD_FAILURE() << "not refused";
    } catch (const ScenarioError& e) {
      EXPECT_EQ(e.key, row.key);
      EXPECT_EQ(e.value, row.value);
      EXPECT_NE(e.rule.find(row.rule_part), std::string::npos) << e.rule;
    }
  }
}

}  // namespace
}  // namespace twinsim::exec
