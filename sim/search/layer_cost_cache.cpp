#include "sim/search/layer_cost_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/training/layer_costs.hpp"

namespace twinsim {

PassTimes pass_times(const LayerCost& cost) {
  PassTimes t;
  t.fwd = cost.fwd_s(TimeCategory::compute);
  t.bwd = cost.bwd_s(TimeCategory::compute);
  t.recompute = cost.recompute_s();
  t.tp_fwd = cost.fwd_s(TimeCategory::tp_comm);
  t.tp_bwd = cost.bwd_s(TimeCategory::tp_comm);
  t.tp_fwd_waited = cost.tp_waited_fwd_s;
  t.tp_bwd_waited = cost.tp_waited_bwd_s;
  t.tp_recompute = cost.recompute_comm_s(TimeCategory::tp_comm);
  t.tp_recompute_waited = cost.tp_waited_recompute_s;
  t.cp_fwd = cost.fwd_s(TimeCategory::cp_comm);
  t.cp_bwd = cost.bwd_s(TimeCategory::cp_comm);
  t.cp_fwd_waited = cost.cp_waited_fwd_s;
  t.cp_bwd_waited = cost.cp_waited_bwd_s;
  t.ep_fwd = cost.fwd_s(TimeCategory::ep_comm);
  t.ep_bwd = cost.bwd_s(TimeCategory::ep_comm);
  return t;
}

namespace {

// value -> position in `values` (a lookup table, so the hot path does no search).
std::vector<int> slots(const std::vector<int>& values, int& count) {
  int max = 1;
  for (int v : values) max = std::max(max, v);
  std::vector<int> s(static_cast<std::size_t>(max) + 1, -1);
  count = 0;
  for (int v : values) s.at(v) = count++;
  return s;
}

int slot(const std::vector<int>& table, int value, const char* what) {
  if (value < 0 || value >= static_cast<int>(table.size()) || table[value] < 0)
    throw std::out_of_range(std::string("LayerCostCache: ") + what + " not in the search space");
  return table[value];
}

}  // namespace

LayerCostCache::LayerCostCache(const Scenario& base, const std::vector<int>& tp_values,
                               const std::vector<int>& cp_values, const std::vector<int>& ep_values,
                               int max_micro_batch)
    : scratch_(base), base_plan_(base.plan) {
  if (!base.training) throw std::invalid_argument("LayerCostCache needs a training scenario");
  tp_slot_ = slots(tp_values, tps_);
  cp_slot_ = slots(cp_values, cps_);
  ep_slot_ = slots(ep_values, eps_);
  mbs_ = max_micro_batch;
  const std::size_t n = static_cast<std::size_t>(tps_) * tps_ * cps_ * eps_ * 2 * 2 * 3 * mbs_;  // tp, expert_tp, ...
  if (n > 50'000'000) throw std::invalid_argument("LayerCostCache: key space too large");
  prices_.resize(n);
  ready_.assign(n, 0);
}

std::size_t LayerCostCache::index(const Candidate& c) const {
  const int recompute = static_cast<int>(c.recompute);
  std::size_t i = static_cast<std::size_t>(slot(tp_slot_, c.tp, "tp"));
  i = i * tps_ + static_cast<std::size_t>(slot(tp_slot_, c.etp(), "expert_tp"));  // drawn from the tp values
  i = i * cps_ + static_cast<std::size_t>(slot(cp_slot_, c.cp, "cp"));
  i = i * eps_ + static_cast<std::size_t>(slot(ep_slot_, c.ep, "ep"));
  i = i * 2 + (c.sequence_parallel ? 1 : 0);
  i = i * 2 + (c.tp_comm_overlap ? 1 : 0);  // the power limit's mix (layer_costs.cpp work_mix)
  i = i * 3 + static_cast<std::size_t>(recompute);
  if (c.micro_batch < 1 || c.micro_batch > mbs_) throw std::out_of_range("LayerCostCache: micro_batch");
  return i * mbs_ + static_cast<std::size_t>(c.micro_batch - 1);
}

void LayerCostCache::fill(const Candidate& c, LayerPrices& out) {
  Scenario& s = scratch_;
  apply_to_plan(c, s.plan);
  s.training->micro_batch = c.micro_batch;
  out.dense = pass_times(cost_layer(s, 0));
  if (s.model.moe) out.moe = pass_times(cost_layer(s, s.model.layers - 1));
  out.embedding = pass_times(cost_embedding(s));
  out.head = pass_times(cost_head(s));
  const MicroBatchShape shape = training_shape(*s.training, s.stack);  // micro_batch: the candidate's, set above
  out.activations = layer_activations(s.model, s.plan, shape);
  Plan compressed = s.plan;  // what the scenario's compression sends, for the candidates that keep it
  compressed.gradient_compression = base_plan_.gradient_compression;
  compressed.gradient_powersgd_rank = base_plan_.gradient_powersgd_rank;
  out.low_rank = powersgd_share(s.model, compressed);
}

const LayerPrices& LayerCostCache::get(const Candidate& c) {
  const std::size_t i = index(c);
  if (!ready_[i]) {
    fill(c, prices_[i]);
    ready_[i] = 1;
    ++filled_;
  }
  return prices_[i];
}

}  // namespace twinsim
