#pragma once
// Small inference scenarios for the tests, from the catalogs (models/catalog, hardware/catalog).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "tests/unit/scenario/expect_refused.hpp"

namespace twinsim::test {

// `model` on `gpus` GPUs of `node` with the given plan and workload, priced on the device
// alone (`stack: none`): the tests check the op list's costs, and set a stack where they mean one.
inline Scenario serving_scenario(const std::string& model, const std::string& node, int gpus, int tp, int pp,
                                 std::int64_t batch, std::int64_t prompt, std::int64_t output,
                                 const std::string& weight_dtype = "fp16", const std::string& kv_dtype = "fp16") {
  const std::string text = "model: " + model + "\ncluster: {preset: " + node + ", gpus_per_node: " +
                           std::to_string(gpus) + ", nodes: 1}\ninference: {prompt_len: " + std::to_string(prompt) +
                           ", output_len: " + std::to_string(output) + ", batch: " + std::to_string(batch) +
                           ", weight_dtype: " + weight_dtype + ", kv_dtype: " + kv_dtype + "}\nplan: {tp: " +
                           std::to_string(tp) + ", pp: " + std::to_string(pp) + "}\n";
  return load_scenario_text(text + "stack: none\n");
}

}  // namespace twinsim::test
