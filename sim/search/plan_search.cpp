#include "sim/search/plan_search.hpp"

#include <algorithm>
#include <chrono>

#include "scenario/default_stack.hpp"
#include "scenario/errors.hpp"
#include "sim/memory/memory_report.hpp"
#include "sim/search/candidate.hpp"
#include "sim/training/training_report.hpp"
#include "sim/trust/prediction_interval.hpp"

namespace twinsim {

bool parse_objective(const std::string& name, Objective& out) {
  if (name == "step_time") out = Objective::step_time;
  else if (name == "cost") out = Objective::cost;
  else if (name == "tokens_per_s") out = Objective::tokens_per_s;
  else return false;
  return true;
}

std::string_view to_string(Objective o) {
  switch (o) {
    case Objective::step_time: return "step_time";
    case Objective::cost: return "cost";
    case Objective::tokens_per_s: return "tokens_per_s";
  }
  return "?";
}

double objective_score(Objective o, double step_s, std::int64_t gpus, const TrainingWorkload& t) {
  switch (o) {
    case Objective::step_time: return step_s;
    case Objective::cost: return step_s * static_cast<double>(gpus);
    case Objective::tokens_per_s: return -static_cast<double>(t.global_batch * t.seq_len) / step_s;
  }
  return step_s;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Best first: lower score, then the canonical plan order.
bool better(const SearchEntry& a, const SearchEntry& b) {
  if (a.score != b.score) return a.score < b.score;
  return canonical_less(a.plan, b.plan);
}

// Keeps the `keep` best entries in a max-heap (worst on top) of fixed capacity.
struct BestK {
  std::vector<SearchEntry> heap;
  std::size_t keep;
  explicit BestK(int k) : keep(static_cast<std::size_t>(std::max(1, k))) { heap.reserve(keep); }
  void offer(const SearchEntry& e) {
    if (heap.size() < keep) {
      heap.push_back(e);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(e, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = e;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::vector<SearchEntry> sorted() const {
    std::vector<SearchEntry> out = heap;
    std::sort(out.begin(), out.end(), better);
    return out;
  }
};

}  // namespace

std::string_view SearchResult::stack_of(const Candidate& c) const {
  return stack_follows_plan ? default_training_stack_name(c) : std::string_view(stack);
}

int confirm_count(const SearchOptions& o) { return o.confirm > 0 ? o.confirm : 2 * std::max(1, o.top); }

AnalyticPass run_analytic_pass(const Scenario& base, const SearchOptions& options, int keep) {
  const SearchSpace space = make_search_space(base, options.space);
  if (options.max_plans > 0 && count_whole_space_up_to(space, options.max_plans) > options.max_plans)
    throw ScenarioError("--max-plans", std::to_string(options.max_plans),
                        "is below the plans of this search space (about 1.6M are estimated a second): narrow "
                        "--gpus-range, lower --max-micro-batch, or raise --max-plans");
  AnalyticModel model(base, space);
  AnalyticPass pass;
  BestK best(keep);
  const std::int64_t total = options.progress ? count_candidates(space) : 0;
  const TrainingWorkload& t = *base.training;
  for_each_candidate(space, [&](const Candidate& c) {
    const AnalyticEstimate e = model.estimate(c);
    ++pass.candidates;
    if (options.progress && pass.candidates % options.progress_every == 0) options.progress(pass.candidates, total);
    if (!e.fits) return;
    ++pass.fitting;
    SearchEntry entry;
    entry.plan = c;
    entry.analytic = e;
    entry.score = objective_score(options.objective, e.step_s, c.gpus(), t);
    best.offer(entry);
    pass.pareto.add({e.step_s, e.peak_bytes, c.gpus(), c});
  });
  if (options.progress) options.progress(pass.candidates, total);
  pass.best = best.sorted();
  return pass;
}

AnalyticPass merge_passes(const std::vector<AnalyticPass>& parts, int keep) {
  AnalyticPass out;
  BestK best(keep);
  for (const AnalyticPass& p : parts) {
    out.candidates += p.candidates;
    out.fitting += p.fitting;
    for (const SearchEntry& e : p.best) best.offer(e);
    for (const ParetoPoint& q : p.pareto.points()) out.pareto.add(q);
  }
  out.best = best.sorted();
  return out;
}

SearchResult finish_search(const Scenario& base, const SearchOptions& options, const AnalyticPass& pass) {
  SearchResult r;
  r.scenario_plan = base.plan;
  r.stack = base.stack.name;
  r.stack_is_default = base.stack_is_default;
  r.stack_follows_plan = default_stack_follows_plan(base);
  r.candidates = pass.candidates;
  r.fitting = pass.fitting;
  const auto t0 = Clock::now();
  std::vector<SearchEntry> confirmed;
  for (SearchEntry e : pass.best) {
    try {
      const Scenario s = candidate_scenario(base, e.plan);  // the validator `simulate` runs
      e.memory_peak_bytes = predict_memory(s).peak_bytes;
      if (options.simulate) {
        const TrainingPrediction sim = predict_training(s);
        e.simulated_step_s = sim.step_s;
        const trust::TrustInterval interval = trust::step_interval(s, sim);
        e.step_s_interval = {interval.low, interval.high};
        e.simulated = true;
        e.score = objective_score(options.objective, e.simulated_step_s, e.plan.gpus(), *base.training);
      }
      confirmed.push_back(e);
    } catch (const ScenarioError&) {
      ++r.rejected_by_validator;
    }
  }
  std::sort(confirmed.begin(), confirmed.end(), better);
  if (static_cast<int>(confirmed.size()) > options.top) confirmed.resize(options.top);
  r.top = std::move(confirmed);
  if (base.goodput)
    for (const SearchEntry& e : r.top)
      r.top_goodput.push_back(predict_goodput(candidate_scenario(base, e.plan), *base.goodput,
                                              e.simulated ? e.simulated_step_s : e.analytic.step_s));
  r.pareto = pass.pareto.sorted();
  r.confirm_s = seconds_since(t0);
  return r;
}

SearchResult search_plans(const Scenario& base, const SearchOptions& options) {
  const auto t0 = Clock::now();
  const AnalyticPass pass = run_analytic_pass(base, options, confirm_count(options));
  const double analytic_s = seconds_since(t0);
  SearchResult r = finish_search(base, options, pass);
  r.analytic_s = analytic_s;
  return r;
}

}  // namespace twinsim
