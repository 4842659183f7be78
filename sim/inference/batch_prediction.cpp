#include "sim/inference/batch_prediction.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "models/report_inference.hpp"
#include "models/report_ops.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/stage_layers.hpp"
#include "sim/inference/disaggregated.hpp"
#include "sim/inference/speculative.hpp"

namespace twinsim {

namespace {

// Decode with speculation, in expectation: each step verifies K proposals per sequence and
// yields tokens_per_step() tokens (Leviathan et al. 2023 Eq. 1), so output_len - 1 tokens
// take (output_len - 1) / E steps, the last one counted by the share it is needed; a step
// at `g` tokens generated runs at context prompt_len + floor(g) + 1.
double speculative_decode(const Scenario& s, const PassCostModel& model, InferencePrediction& p) {
  const InferenceWorkload& w = *s.inference;
  const SpeculativeDecoding& spec = *w.speculative;
  const double per_step = spec.tokens_per_step();
  const double wanted = static_cast<double>(w.output_len - 1);
  double decode_s = 0;
  for (double g = 0; g < wanted; g += per_step) {
    const std::int64_t context = w.prompt_len + static_cast<std::int64_t>(g) + 1;
    const PassShape pass = speculative_decode_pass(w.batch, context, spec.tokens, s.model.sliding_window);
    const IterationCost step = model.cost(pass);
    const double share = std::min(1.0, (wanted - g) / per_step);
    decode_s += share * step.latency_s();
    const std::vector<PassOpTime> ops = model.target().op_times(pass.target);
    if (p.decode_passes++ == 0) {
      p.first_decode = step;
      p.first_draft_s = model.draft_s(pass);
      p.decode_ops = ops;
    } else {
      for (std::size_t i = 0; i < ops.size() && i < p.decode_ops.size(); ++i) p.decode_ops[i].time_s += ops[i].time_s;
    }
  }
  for (PassOpTime& op : p.decode_ops) op.time_s /= static_cast<double>(std::max<std::int64_t>(1, p.decode_passes));
  return decode_s;
}

double plain_decode(const Scenario& s, const ServingCostModel& model, InferencePrediction& p) {
  const InferenceWorkload& w = *s.inference;
  double decode_s = 0;
  // decode pass j computes the K,V of token prompt_len + j - 1 and samples token j + 1
  for (std::int64_t j = 1; j < w.output_len; ++j) {
    const IterationCost step = model.cost(decode_shape(w.batch, w.prompt_len + j, s.model.sliding_window));
    if (j == 1) p.first_decode = step;
    decode_s += step.latency_s();
    // every decode pass runs the same ops; their times grow with the context
    const std::vector<PassOpTime> ops = model.op_times(decode_shape(w.batch, w.prompt_len + j, s.model.sliding_window));
    if (j == 1) p.decode_ops = ops;
    else
      for (std::size_t i = 0; i < ops.size() && i < p.decode_ops.size(); ++i) p.decode_ops[i].time_s += ops[i].time_s;
  }
  for (PassOpTime& op : p.decode_ops) op.time_s /= static_cast<double>(w.output_len - 1);
  p.decode_passes = w.output_len - 1;
  return decode_s;
}

}  // namespace

namespace {

// A static batch through the two pools: the prefill replica's pass (TTFT: it samples the
// first token), the batch's K,V sent to a decode replica, then the decode replica's passes.
// Each pool serves batches back to back; the slower one sets the requests per second.
InferencePrediction predict_disaggregated(const Scenario& s) {
  const InferenceWorkload& w = *s.inference;
  const Disaggregation& d = *w.disaggregation;
  InferencePrediction p = predict_inference(decode_replica(s));
  const Scenario prefill = prefill_replica(s);
  const PassCostModel prefill_model(prefill);
  const IterationShape prompts = prompt_shape(w, s.model.sliding_window);
  p.prefill = prefill_model.cost(PassShape{prompts, {}, {}});
  p.prefill_ops = prefill_model.target().op_times(prompts);
  p.ttft_s = p.prefill.latency_s();
  p.kv_transfer_s = kv_transfer_s(s, w.batch * w.prompt_len);
  const double decode_s = p.tpot_s * static_cast<double>(w.output_len - 1);
  p.e2e_s = p.ttft_s + p.kv_transfer_s + decode_s;
  p.prefill_requests_per_s = d.prefill_replicas * static_cast<double>(w.batch) / p.ttft_s;
  p.decode_requests_per_s = decode_s > 0 ? d.decode_replicas * static_cast<double>(w.batch) / decode_s : 0;
  p.requests_per_s = decode_s > 0 ? std::min(p.prefill_requests_per_s, p.decode_requests_per_s) : p.prefill_requests_per_s;
  p.output_tokens_per_s = p.requests_per_s * static_cast<double>(w.output_len);
  return p;
}

}  // namespace

InferencePrediction predict_inference(const Scenario& s) {
  const InferenceWorkload& w = *s.inference;
  if (w.disaggregation) return predict_disaggregated(s);
  const PassCostModel model(s);
  InferencePrediction p;
  const IterationShape prefill = prompt_shape(w, s.model.sliding_window);
  // a draft model prefills the prompts too, after the served model
  p.prefill = model.cost(PassShape{prefill, w.speculative ? prefill : IterationShape{}, {}});
  p.ttft_s = p.prefill.latency_s();
  p.prefill_ops = model.target().op_times(prefill);
  const double decode_s = w.speculative ? speculative_decode(s, model, p) : plain_decode(s, model.target(), p);
  p.tpot_s = w.output_len > 1 ? decode_s / static_cast<double>(w.output_len - 1) : 0;
  p.decode_weight_bytes_per_step = p.first_decode.weight_bytes;
  p.e2e_s = p.ttft_s + decode_s;
  const double replicas = s.plan.dp;
  p.output_tokens_per_s = replicas * static_cast<double>(w.batch * w.output_len) / p.e2e_s;
  p.requests_per_s = replicas * static_cast<double>(w.batch) / p.e2e_s;
  p.kv_cache_bytes_per_token = kv_cache_bytes_per_token(s.model, s.model.layers, 1, w.kv_dtype);
  for (int stage = 0; stage < s.plan.pp; ++stage)
    p.kv_cache_bytes_per_token_per_gpu =
        std::max(p.kv_cache_bytes_per_token_per_gpu,
                 kv_cache_bytes_per_token(s.model, stage_layers(s.model, s.plan, stage).total(), s.plan.tp, w.kv_dtype));
  KvCacheConfig kv;
  kv.block_tokens = engine_block_tokens(s.stack);
  p.kv = kv_capacity(s, engine_kv_config(s, kv));
  p.max_batch = max_batch(p.kv, w.prompt_len + w.output_len, s.model, s.stack);
  p.weights_offloaded = s.plan.offload_params;
  p.engine_host_time = s.stack.has_serving_host_time();
  return p;
}

namespace {

nlohmann::json pass_json(const IterationCost& c, bool offloaded, bool hosted) {
  nlohmann::json j = {{"latency_s", c.latency_s()},   {"stage_s", c.stage_s},           {"p2p_s", c.p2p_s},
                      {"compute_s", c.compute_s},     {"tp_comm_s", c.tp_comm_s},       {"ep_comm_s", c.ep_comm_s},
                      {"weight_bytes_read", c.weight_bytes},
                      {"kv_bytes_moved", c.kv_bytes}};
  if (offloaded) j["weight_fetch_exposed_s"] = c.weight_fetch_exposed_s;  // plan.offload_params only
  if (hosted) j["host_s"] = c.host_s;  // a stack with serving host time only
  return j;
}

// [{name, time_s: one call, count: calls per pass}], as time.ops of a training report
nlohmann::json ops_json(const std::vector<PassOpTime>& ops) {
  std::vector<PredictedOp> rows;
  for (const PassOpTime& op : ops) rows.push_back({op.name, op.time_s, op.count, {}, {}, {}});
  return to_json(rows);
}

}  // namespace

nlohmann::json to_json(const InferencePrediction& p, const InferenceWorkload& w, int plan_tp) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageKvCapacity& st : p.kv.stages)
    stages.push_back({{"stage", st.stage},
                      {"usable_bytes", st.usable_bytes},
                      {"weight_bytes", st.weight_bytes},
                      {"buffer_bytes", st.buffer_bytes},
                      {"activation_bytes", st.activation_bytes},
                      {"kv_bytes", st.kv_bytes},
                      {"kv_bytes_per_token", st.bytes_per_token},
                      {"blocks", st.blocks}});
  nlohmann::json prefill = pass_json(p.prefill, p.weights_offloaded, p.engine_host_time);
  prefill["ops"] = ops_json(p.prefill_ops);
  nlohmann::json j = {{"max_batch", p.max_batch},
          {"e2e_s", p.e2e_s},
          {"requests_per_s", p.requests_per_s},
          {"kv_cache_bytes_per_token_per_gpu", p.kv_cache_bytes_per_token_per_gpu},
          {"decode_weight_bytes_per_step", p.decode_weight_bytes_per_step},
          {"prefill", prefill},
          {"first_decode", pass_json(p.first_decode, p.weights_offloaded, p.engine_host_time)},
          {"decode", {{"passes", p.decode_passes}, {"mean_latency_s", p.tpot_s}, {"ops", ops_json(p.decode_ops)}}},
          {"kv_cache", {{"block_tokens", p.kv.block_tokens},
                        {"blocks", p.kv.blocks},
                        {"tokens", p.kv.tokens()},
                        {"limiting_stage", p.kv.limiting_stage},
                        {"stages", stages}}}};
  write_inference_summary(j, {p.ttft_s, p.tpot_s, p.output_tokens_per_s, static_cast<double>(p.kv_cache_bytes_per_token)});
  if (w.speculative) {
    const SpeculativeDecoding& spec = *w.speculative;
    j["speculative"] = {{"method", to_string(spec.method)},
                        {"tokens", spec.tokens},
                        {"acceptance_rate", spec.acceptance_rate},
                        {"tokens_per_step", spec.tokens_per_step()},
                        {"first_step_draft_s", p.first_draft_s}};
    if (spec.draft_model) j["speculative"]["draft_model"] = spec.draft_model->name;
  }
  if (const auto& d = w.disaggregation)
    j["disaggregation"] = {{"prefill_replicas", d->prefill_replicas},
                           {"prefill_tp", d->prefill_tp_or(plan_tp)},
                           {"decode_replicas", d->decode_replicas},
                           {"decode_tp", plan_tp},
                           {"kv_transfer_s", p.kv_transfer_s},
                           {"prefill_requests_per_s", p.prefill_requests_per_s},
                           {"decode_requests_per_s", p.decode_requests_per_s}};
  return j;
}

}  // namespace twinsim
