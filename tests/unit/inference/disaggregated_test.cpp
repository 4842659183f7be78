// Prefill/decode disaggregation (sim/inference/disaggregated): requests alone in the system
// take exactly the prefill pass, the K,V transfer and the decode passes, each priced by the
// cost model, summed by hand here; two prefill replicas take two prompts at once; the
// transfer splits over the prefill replica's GPUs; bad settings name their field.
#include <gtest/gtest.h>

#include "scenario/errors.hpp"
#include "scenario/load.hpp"
#include "sim/cost/collective_cost.hpp"
#include "sim/inference/batch_prediction.hpp"
#include "sim/inference/disaggregated.hpp"
#include "sim/inference/iteration_cost.hpp"
#include "sim/memory/inference.hpp"
#include "serving_scenarios.hpp"

namespace twinsim {
namespace {

Scenario llama3_8b(const std::string& disaggregation, int tp = 1) {
  return load_scenario_text("model: llama3-8b\ncluster: dgx-h100\ninference: {prompt_len: 1024, output_len: 8, batch: 4, "
                            "disaggregation: " + disaggregation + "}\nplan: {tp: " + std::to_string(tp) + "}\n");
}

TEST(Disaggregated, ALoneRequestTakesThePrefillTheTransferAndTheDecodePasses) {
  const Scenario s = llama3_8b("{prefill_replicas: 1, decode_replicas: 1}");
  // arrivals 100 s apart: every request is alone in both pools
  const std::vector<Request> requests{{0.0, 1024, 8}, {100.0, 1024, 8}};
  const DisaggregatedServing d = simulate_disaggregated(s, requests, ServeOptions{});
  const ServingCostModel prefill(prefill_replica(s)), decode(decode_replica(s));
  // the frontend's request path (the default stack's serving_request_us, and its
  // serving_request_token_us for each of the 1,024 prompt tokens) once, on the way in
  const double path = s.stack.serving_request_s + 1024 * s.stack.serving_request_token_s;
  const double ttft = path + prefill.cost(prefill_shape(1, 1024)).latency_s();
  double decoding = 0;  // tokens 2..8: contexts 1025..1031
  for (std::int64_t j = 1; j < 8; ++j) decoding += decode.cost(decode_shape(1, 1024 + j)).latency_s();
  const double transfer = kv_transfer_s(s, 1024);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_NEAR(d.result.times[i].first_token_s - requests[i].arrival_s, ttft, 1e-12);
    EXPECT_NEAR(d.result.times[i].finish_s - requests[i].arrival_s, ttft + transfer + decoding, 1e-9);
    EXPECT_DOUBLE_EQ(d.transfer_s[i], transfer);
  }
  EXPECT_EQ(d.prefill_gpus + d.decode_gpus, 2);
}

TEST(Disaggregated, TwoPrefillReplicasTakeTwoPromptsAtOnce) {
  const std::vector<Request> together{{0.0, 1024, 2}, {0.0, 1024, 2}};
  const DisaggregatedServing one = simulate_disaggregated(llama3_8b("{prefill_replicas: 1}"), together, {});
  const DisaggregatedServing two = simulate_disaggregated(llama3_8b("{prefill_replicas: 2}"), together, {});
  const Scenario base = llama3_8b("{}");
  const double path = base.stack.serving_request_s + 1024 * base.stack.serving_request_token_s;
  const double alone = path + ServingCostModel(prefill_replica(base)).cost(prefill_shape(1, 1024)).latency_s();
  EXPECT_NEAR(two.result.times[0].first_token_s, alone, 1e-12);  // round-robin: one prompt each
  EXPECT_NEAR(two.result.times[1].first_token_s, alone, 1e-12);
  EXPECT_GT(one.result.times[1].first_token_s, alone);  // one replica prefills both in one pass
  EXPECT_EQ(two.prefill_gpus, 2);
}

TEST(Disaggregated, TheTransferSplitsOverThePrefillReplicasGpus) {
  // llama3-8b: 32 layers x 2 x 8 KV heads x 128 x 2 B = 131,072 B a token, all layers
  const Scenario tp1 = llama3_8b("{prefill_tp: 1}", 2), tp2 = llama3_8b("{prefill_tp: 2}", 2);
  EXPECT_EQ(kv_cache_bytes_per_token(tp1.model, tp1.model.layers, 1, Dtype::bf16), 131'072);
  GroupLayout across_nodes;
  across_nodes.ranks = 2;
  EXPECT_DOUBLE_EQ(kv_transfer_s(tp1, 1024), collective_time_s(tp1.cluster, CollectiveOp::send_recv, across_nodes, 1024.0 * 131'072));
  EXPECT_DOUBLE_EQ(kv_transfer_s(tp2, 1024),
                   collective_time_s(tp2.cluster, CollectiveOp::send_recv, across_nodes, 1024.0 * 131'072 / 2));
  EXPECT_LT(kv_transfer_s(llama3_8b("{kv_link: intra_node}"), 1024), kv_transfer_s(llama3_8b("{}"), 1024));
}

TEST(Disaggregated, StaticBatchTtftIsThePrefillReplicasAndTheSlowerPoolSetsTheRate) {
  const Scenario s = llama3_8b("{prefill_replicas: 1, prefill_tp: 2, decode_replicas: 3}");
  const InferencePrediction p = predict_inference(s);
  EXPECT_NEAR(p.ttft_s, ServingCostModel(prefill_replica(s)).cost(prefill_shape(4, 1024)).latency_s(), 1e-12);
  const InferencePrediction plain = predict_inference(decode_replica(s));
  EXPECT_DOUBLE_EQ(p.tpot_s, plain.tpot_s);  // the decode replica's passes
  EXPECT_NEAR(p.prefill_requests_per_s, 4 / p.ttft_s, 1e-9);
  EXPECT_NEAR(p.decode_requests_per_s, 3 * 4 / (7 * p.tpot_s), 1e-9);
  EXPECT_DOUBLE_EQ(p.requests_per_s, std::min(p.prefill_requests_per_s, p.decode_requests_per_s));
  EXPECT_NEAR(p.e2e_s, p.ttft_s + p.kv_transfer_s + 7 * p.tpot_s, 1e-12);
}

TEST(Disaggregated, BadSettingsAreRefusedNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"{prefill_tp: 3}", "inference.disaggregation.prefill_tp=3 does not divide model.heads=32"},
      {"{prefill_replicas: 0}", "inference.disaggregation.prefill_replicas=0 must be at least 1"},
      {"{kv_link: pcie}", "inference.disaggregation.kv_link=pcie is not one of"},
      {"{prefill_replicas: 9, kv_link: intra_node}", "inference.disaggregation.kv_link=intra_node needs both pools in one node: 10 GPUs"},
      {"{decode_pool: 2}", "inference.disaggregation.decode_pool"},
  };
  test::expect_refused([](const std::string& d) { return llama3_8b(d); }, cases);
  test::expect_refused(
      [](const std::string& plan) {
        return load_scenario_text("model: llama3-8b\ncluster: dgx-h100\ninference: {prompt_len: 64, "
                                  "disaggregation: {}}\nplan: " + plan + "\n");
      },
      {{"{tp: 1, pp: 2}", "inference.disaggregation: is modelled for replicas of one stage"}});
}

}  // namespace
}  // namespace twinsim
