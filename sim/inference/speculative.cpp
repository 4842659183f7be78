#include "sim/inference/speculative.hpp"

namespace twinsim {

Scenario draft_scenario(const Scenario& s) {
  Scenario d = s;
  d.model = *s.inference->speculative->draft_model;
  d.plan = draft_plan(s.plan, d.model);
  d.inference->speculative.reset();
  // the engine's host time comes once a step, with the served model's pass
  d.stack.serving_step_s = d.stack.serving_sequence_s = 0;
  return d;
}

PassShape speculative_decode_pass(std::int64_t batch, std::int64_t context, int proposals, std::int64_t window) {
  PassShape p;
  p.target.window = window;
  p.target.add_chunk(context - 1, 1 + proposals, true);
  p.target.sampled += proposals;  // every verified position has its logits
  p.target.repeat(batch);
  p.draft_first = decode_shape(batch, context, window);
  p.draft_next = decode_shape(batch, context + 1, window);
  return p;
}

PassCostModel::PassCostModel(const Scenario& s) : target_(s) {
  const auto& spec = s.inference->speculative;
  if (!spec || !spec->draft_model) return;
  draft_.emplace(draft_scenario(s));
  proposals_ = spec->tokens;
}

namespace {

// c + times x d, field by field; the latency goes to the first stage (speculation runs
// without pipeline parallelism, scenario/validate.cpp).
void add_pass(IterationCost& c, const IterationCost& d, double times) {
  if (c.stage_s.empty()) c.stage_s.push_back(0);
  c.stage_s[0] += times * d.latency_s();
  c.compute_s += times * d.compute_s;
  c.tp_comm_s += times * d.tp_comm_s;
  c.ep_comm_s += times * d.ep_comm_s;
  c.weight_bytes += times * d.weight_bytes;
  c.kv_bytes += times * d.kv_bytes;
}

}  // namespace

IterationCost PassCostModel::draft_cost(const PassShape& pass) const {
  IterationCost c;
  if (!draft_) return c;
  if (pass.draft_first.tokens > 0) add_pass(c, draft_->cost(pass.draft_first), 1);
  if (pass.draft_next.tokens > 0) add_pass(c, draft_->cost(pass.draft_next), proposals_ - 1);
  return c;
}

IterationCost PassCostModel::cost(const PassShape& pass) const {
  IterationCost c = target_.cost(pass.target);
  if (draft_) add_pass(c, draft_cost(pass), 1);
  return c;
}

double PassCostModel::draft_s(const PassShape& pass) const { return draft_cost(pass).latency_s(); }

}  // namespace twinsim
