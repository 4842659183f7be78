#include "sim/search/search_text.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace twinsim {

namespace {

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// The stack a plan was priced on, padded to its column (the longest catalog name and more).
std::string stack_cell(const SearchResult& r, const Candidate& c) {
  std::string cell(r.stack_of(c));
  cell.resize(std::max<std::size_t>(cell.size() + 2, 20), ' ');
  return cell;
}

// The knobs' columns: the candidate's fields (sim/search/candidate.hpp) before the metrics,
// but those added after the CSV's first release (late_setting) after them, so that columns
// keep their place.
bool late(const auto& knob) { return knob.in_search == InSearch::late_setting; }

}  // namespace

void write_csv(std::ostream& out, const SearchResult& r) {
  out << "rank,gpus";
  for_each_candidate_field([&](const auto& knob) { if (!late(knob)) out << "," << knob.key; },
                           [&] { out << ",micro_batch"; });
  out << ",analytic_step_s,simulated_step_s,peak_bytes,pareto";
  for_each_searched_knob([&](const auto& knob) { if (late(knob)) out << "," << knob.key; });
  out << ",stack\n";  // what the plan was priced on (SearchResult::stack_of), last: columns keep their place
  auto cell = [&](const auto& knob, const PlanKnobs& p) {
    if constexpr (std::is_same_v<std::decay_t<decltype(knob)>, BoolKnob>)
      out << "," << (p.*knob.member ? 1 : 0);
    else
      out << "," << knob_text(knob, p);
  };
  auto row = [&](int rank, const Candidate& c, double analytic, double simulated, std::int64_t peak, bool pareto) {
    out << rank << "," << c.gpus();
    for_each_candidate_field([&](const auto& knob) { if (!late(knob)) cell(knob, c); },
                             [&] { out << "," << c.micro_batch; });
    out << "," << analytic << ",";
    if (simulated > 0) out << simulated;
    out << "," << peak << "," << pareto;
    for_each_searched_knob([&](const auto& knob) { if (late(knob)) cell(knob, c); });
    out << "," << r.stack_of(c) << "\n";
  };
  int rank = 1;
  for (const SearchEntry& e : r.top)
    row(rank++, e.plan, e.analytic.step_s, e.simulated ? e.simulated_step_s : 0, e.analytic.peak_bytes, false);
  for (const ParetoPoint& p : r.pareto) row(0, p.plan, p.step_s, 0, p.peak_bytes, true);
}

// The scenario settings its searched plans keep where they apply (keep_scenario_settings in
// sim/search/candidate.cpp): gradient compression, parameter and activation offload, ZeRO++.
void print_kept_settings(std::ostream& out, const Plan& plan) {
  if (plan.gradient_compression != GradCompression::none)
    out << "ZeRO 0-2 plans with more than one DP rank use the scenario's " << to_string(plan.gradient_compression)
        << " gradient compression (error feedback: 4 bytes per parameter more)\n";
  if (plan.offload_params)
    out << "ZeRO-3 plans over more than one DP rank that offload the optimizer also keep their parameter shard in "
           "CPU memory (the scenario's plan.offload_params)\n";
  if (plan.offload_activations_layers > 0)
    out << "one-stage plans without recomputation offload the activations of their first "
        << plan.offload_activations_layers << " layers to CPU memory (the scenario's plan.offload_activations_layers)\n";
  if (!plan.zero_quantized_weights && !plan.zero_quantized_gradients && plan.zero_hpz_partition_size <= 1) return;
  std::vector<std::string> parts;
  if (plan.zero_quantized_weights) parts.push_back("int8 weight gathers (qwZ)");
  if (plan.zero_quantized_gradients) parts.push_back("int4 gradient reduce-scatters (qgZ)");
  if (plan.zero_hpz_partition_size > 1)
    parts.push_back("hpZ over " + std::to_string(plan.zero_hpz_partition_size) + " GPUs where the layout allows it");
  out << "ZeRO-3 plans use the scenario's ZeRO++:";
  for (std::size_t i = 0; i < parts.size(); ++i) out << (i ? ", " : " ") << parts[i];
  out << "\n";
}

namespace {

// With the scenario's `goodput:` section: each ranked plan's effective training time ratio,
// checkpoint interval and, with train_tokens, days to train.
void print_goodput_column(std::ostream& out, const std::vector<GoodputReport>& top) {
  if (top.empty()) return;
  out << "\ngoodput (failure rates " << top.front().rates << "):\n"
      << "rank  interruptions/day  ettr   interval_min  days\n";
  int rank = 1;
  for (const GoodputReport& g : top) {
    out << std::setw(4) << rank++ << std::setw(19) << std::setprecision(2) << g.interruptions_per_day << std::setw(6)
        << std::setprecision(1) << 100 * g.prediction.ettr << "%" << std::setw(14) << g.prediction.interval_s / 60;
    if (g.time && g.time->finishes) out << std::setw(6) << g.time->wall_s / 86400;
    out << "\n";
  }
}

}  // namespace

void print_result(std::ostream& out, const SearchResult& r) {
  out << r.candidates << " plans estimated in " << std::setprecision(3) << r.analytic_s << " s ("
            << std::llround(r.candidates / std::max(r.analytic_s, 1e-9)) << " per s), " << r.fitting
            << " fit in memory\n\n";
  if (r.top.empty()) {
    out << "no plan fits: try more GPUs, a smaller micro-batch, or recompute\n";
    return;
  }
  out << "rank  gpus  step_s(sim)  80%_interval(sim)  step_s(est)  peak_GiB  stack               plan\n";
  int rank = 1;
  for (const SearchEntry& e : r.top) {
    std::ostringstream interval;  // the simulated step's trust interval (sim/trust/)
    interval << std::fixed << std::setprecision(3) << e.step_s_interval[0] << "-" << e.step_s_interval[1];
    out << std::setw(4) << rank++ << std::setw(6) << e.plan.gpus() << std::setw(13) << std::fixed
        << std::setprecision(3) << (e.simulated ? e.simulated_step_s : NAN) << std::setw(19)
        << (e.simulated ? interval.str() : std::string("-")) << std::setw(13) << e.analytic.step_s << std::setw(10)
        << std::setprecision(1) << gib(e.memory_peak_bytes) << "  " << stack_cell(r, e.plan) << describe(e.plan)
        << "\n";
  }
  print_goodput_column(out, r.top_goodput);
  out << "\nPareto front (step time vs memory vs GPUs; estimates), " << r.pareto.size() << " plans:\n";
  out << "  gpus  step_s(est)  peak_GiB  stack               plan\n";
  const std::size_t shown = std::min<std::size_t>(r.pareto.size(), 40);
  for (std::size_t i = 0; i < shown; ++i) {
    const ParetoPoint& p = r.pareto[i];
    out << std::setw(6) << p.gpus << std::setw(13) << std::setprecision(3) << p.step_s << std::setw(10)
        << std::setprecision(1) << gib(p.peak_bytes) << "  " << stack_cell(r, p.plan) << describe(p.plan) << "\n";
  }
  if (shown < r.pareto.size()) out << "  ... " << r.pareto.size() - shown << " more (--csv or --json)\n";
}

void print_mix(std::ostream& out, const RecomputeMix& r) {
  auto line = [&out](const char* name, const PolicyCost& p) {
    out << std::left << std::setw(16) << name << std::right << std::fixed << std::setprecision(1)
              << std::setw(10) << gib(p.peak_bytes) << std::setprecision(3) << std::setw(14) << p.recompute_s
              << (p.fits ? "  fits" : "  does not fit") << "\n";
  };
  out << "per-layer recompute on the first stage (" << r.layers << " layers), budget " << std::fixed
            << std::setprecision(1) << gib(r.budget_bytes) << " GiB\n"
            << "policy            peak_GiB  recompute_s\n";
  line("none", r.all_none);
  line("selective", r.all_selective);
  line("full", r.all_full);
  if (!r.feasible) {
    out << "no mix of policies fits the budget\n";
    return;
  }
  line("best mix", r.mix);
  out << "best mix: " << r.none << " layers none, " << r.selective << " selective, " << r.full
            << " full (Megatron: --recompute-method block covers none/full mixes)\n";
  if (r.all_selective.fits)
    out << "saves " << r.all_selective.recompute_s - r.mix.recompute_s << " s per step against selective\n";
  if (r.all_full.fits)
    out << "saves " << r.all_full.recompute_s - r.mix.recompute_s << " s per step against full\n";
}

void print_capacity(std::ostream& out, const CapacityRequest& r, const CapacityPlan& p) {
  out << std::setprecision(4) << r.model << ": " << static_cast<double>(p.params) / 1e9 << "B parameters, "
            << r.tokens / 1e12 << "T tokens -> 6NT = " << p.flops_6nt << " FLOPs (Kaplan et al. 2020)\n"
            << p.steps << " steps of " << r.global_batch << " x " << r.seq_len << " tokens\n";
  if (!p.feasible) {
    out << "no plan on up to " << r.max_gpus << " " << r.gpu << " GPUs trains it in " << r.days
              << " days (raise --max-gpus or --days)\n";
    return;
  }
  out << "GPUs needed: " << p.gpus << " x " << r.gpu << " (" << p.node_type << " nodes)\n"
      << "plan: " << describe(p.plan) << " (stack " << p.stack << ")\n"
      << "step: " << p.step_s << " s simulated (" << p.analytic_step_s << " s estimated), MFU " << std::setprecision(3)
      << p.mfu << ", peak " << static_cast<double>(p.peak_bytes) / (1 << 30) << " GiB per GPU\n"
      << std::setprecision(4) << "time to train: " << p.days << " days (6NT at the simulated rate: " << p.days_6nt
      << " days)\n"
      << "80% interval of the step: " << p.step_s_interval[0] << " - " << p.step_s_interval[1] << " s ("
      << p.interval_regime << "); at its slow end: "
      << (p.gpus_at_slow_end > 0 ? std::to_string(p.gpus_at_slow_end) + " GPUs needed"
                                 : std::string("no plan up to --max-gpus"))
      << "\n"
      << "GPU-hours: " << p.gpu_hours;
  if (r.price_per_gpu_hour > 0) out << ", cost: " << std::fixed << std::setprecision(0) << p.cost;
  out << "\n";
  if (!p.goodput) return;
  const GoodputReport& g = *p.goodput;
  out << std::defaultfloat << std::setprecision(3) << "failures included (" << g.rates << " rates): "
      << g.time->interruptions << " interruptions expected, effective training time " << 100 * g.prediction.ettr
      << "%, a checkpoint every " << g.prediction.interval_s / 60 << " min (" << g.prediction.interval_steps
      << " steps); without failures " << p.failure_free_days << " days";
  if (r.price_per_gpu_hour > 0)
    out << "; failures cost " << std::fixed << std::setprecision(0) << g.time->failure_cost << " ("
        << std::defaultfloat << std::setprecision(3) << g.time->failure_gpu_hours << " GPU-hours)";
  else
    out << "; failures cost " << std::setprecision(3) << g.time->failure_gpu_hours << " GPU-hours";
  out << "\n";
}


void print_serving_capacity(std::ostream& out, const ServingCapacityRequest& r, const ServingCapacityPlan& p) {
  const std::string targets = "p99 TTFT " + nlohmann::json(r.ttft_p99_s).dump() + " s" +
                              (r.tpot_p99_s > 0 ? " and p99 TPOT " + nlohmann::json(r.tpot_p99_s).dump() + " s" : "");
  if (!p.best) {
    out << "no deployment of up to " << r.max_replicas << " replicas" << (r.disaggregate ? " per pool" : "")
        << " meets " << targets << "\n";
    return;
  }
  const ServingDeployment& d = *p.best;
  // the latencies in full, as the JSON writes them
  out << "smallest deployment: " << d.gpus() << " x " << r.gpu << " = ";
  if (d.disaggregated)
    out << d.prefill_replicas << " prefill replica(s) of tp=" << d.prefill_tp << " + " << d.replicas
        << " decode replica(s) of tp=" << d.tp << " (disaggregated)";
  else
    out << d.replicas << " replica(s) of tp=" << d.tp;
  out << ", p99 TTFT " << nlohmann::json(d.ttft_p99_s) << " s, p99 TPOT " << nlohmann::json(d.tpot_p99_s) << " s at "
      << r.rate_per_s << " requests/s (" << r.prompt_len << " prompt + " << r.output_len << " output tokens"
      << (r.prefix_tokens > 0 ? ", " + std::to_string(r.prefix_tokens) + " of the prompt prefix-cached for " +
                                    std::to_string(static_cast<int>(100 * r.prefix_hit_rate)) + "% of requests"
                              : "")
      << (r.speculative ? std::string(", speculative decoding: ") + std::string(to_string(r.speculative->method)) +
                              " proposing " + std::to_string(r.speculative->tokens)
                        : std::string())
      << "); target " << targets << "; simulated on stack " << p.stack << "\n";
}

}  // namespace twinsim
