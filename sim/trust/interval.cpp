#include "sim/trust/interval.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace twinsim::trust {

namespace {

using Cases = std::vector<const CaseError*>;

// From the most specific grouping to none: the first with kMinCases cases is the regime.
const std::vector<std::vector<Dim>> kLevels = {
    {Dim::workload, Dim::gpu, Dim::stack, Dim::model, Dim::parallelism, Dim::scale},
    {Dim::workload, Dim::gpu, Dim::stack, Dim::model},
    {Dim::workload, Dim::gpu, Dim::model},
    {Dim::workload, Dim::stack, Dim::model},
    {Dim::workload, Dim::model},
    {Dim::workload},
    {},
};

// The dimensions a regime is named by in the coverage table and in `validated`.
const std::vector<Dim> kRegimeDims = {Dim::workload, Dim::gpu, Dim::stack, Dim::model};

// Student's t 0.90 quantile (the two-sided 80% interval) for 1..30 degrees of freedom
// (standard tables, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2); the normal's 1.2816 beyond.
double t90(int dof) {
  static constexpr std::array<double, 30> kT = {3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372,
                                                1.363, 1.356, 1.350, 1.345, 1.341, 1.337, 1.333, 1.330, 1.328, 1.325,
                                                1.323, 1.321, 1.319, 1.318, 1.316, 1.315, 1.314, 1.313, 1.311, 1.310};
  if (dof < 1) dof = 1;
  return dof <= 30 ? kT[static_cast<std::size_t>(dof - 1)] : 1.2816;
}

bool same(const CaseError& c, const Regime& r, const std::vector<Dim>& dims) {
  return std::all_of(dims.begin(), dims.end(), [&](Dim d) { return c.regime[d] == r[d]; });
}

Cases select(const Cases& from, const Regime& r, const std::vector<Dim>& dims) {
  Cases out;
  for (const CaseError* c : from)
    if (same(*c, r, dims)) out.push_back(c);
  return out;
}

struct Stats {
  double mean = 0, sd = 0, effective = 0;
  int sources = 0;
};

// Each source weighs one in all, its cases equally (reliability weights; Kish's n_eff).
Stats weighted_stats(const Cases& cases) {
  std::map<std::string, int> per_source;
  for (const CaseError* c : cases) ++per_source[c->source];
  double w_sum = 0, w2_sum = 0, mean = 0;
  for (const CaseError* c : cases) {
    const double w = 1.0 / per_source[c->source];
    w_sum += w;
    w2_sum += w * w;
    mean += w * c->log_ratio;
  }
  Stats s;
  s.sources = static_cast<int>(per_source.size());
  if (cases.empty()) return s;
  s.mean = mean / w_sum;
  s.effective = w_sum * w_sum / w2_sum;
  double ss = 0;
  for (const CaseError* c : cases) ss += (1.0 / per_source[c->source]) * std::pow(c->log_ratio - s.mean, 2);
  const double denominator = w_sum - w2_sum / w_sum;
  s.sd = denominator > 0 ? std::sqrt(ss / denominator) : 0;
  return s;
}

// The spread between the values a dimension takes among `pool`: the sd of their mean errors.
double between_values_sd(const Cases& pool, Dim d) {
  std::map<std::string, Cases> groups;
  for (const CaseError* c : pool) groups[c->regime[d]].push_back(c);
  std::vector<double> means;
  for (const auto& [value, members] : groups) means.push_back(weighted_stats(members).mean);
  if (means.size() < 2) return weighted_stats(pool).sd;
  double mean = 0, ss = 0;
  for (double m : means) mean += m / static_cast<double>(means.size());
  for (double m : means) ss += (m - mean) * (m - mean);
  return std::sqrt(ss / static_cast<double>(means.size() - 1));
}

std::string level_name(const std::vector<Dim>& dims) {
  std::string out;
  for (Dim d : dims) {
    if (!out.empty()) out.push_back('+');
    out.append(kDimNames[static_cast<std::size_t>(d)]);
  }
  return out.empty() ? "all" : out;
}

std::string regime_name(const Regime& r, const std::vector<Dim>& dims) {
  std::string out;
  for (Dim d : dims) {
    if (!out.empty()) out.push_back(' ');
    out.append(r[d]);
  }
  return out.empty() ? "all validation cases" : out;
}

// The extra spread where the regime's cases do not cover the query, with the reasons.
double widening_variance(const Cases& regime, const Cases& pool, const TrustQuery& q, std::vector<std::string>& why) {
  double variance = 0;
  for (Dim d : {Dim::gpu, Dim::stack, Dim::model, Dim::parallelism}) {
    if (std::any_of(regime.begin(), regime.end(), [&](const CaseError* c) { return c->regime[d] == q.regime[d]; }))
      continue;
    const double sd = between_values_sd(pool, d);
    variance += sd * sd;
    char buf[200];
    std::snprintf(buf, sizeof buf, "no validated %s case with %s %s: widened by the spread between validated %ss (%.1f%%)",
                  q.regime[Dim::workload].c_str(), kDimNames[static_cast<std::size_t>(d)], q.regime[d].c_str(),
                  kDimNames[static_cast<std::size_t>(d)], 100 * sd);
    why.push_back(buf);
  }
  long long largest = 0;
  for (const CaseError* c : regime) largest = std::max(largest, c->gpus);
  if (q.gpus > largest) {
    const double sd = between_values_sd(pool, Dim::scale);
    variance += sd * sd;
    why.push_back("scale beyond the validated runs (" + std::to_string(q.gpus) + " GPUs, the regime's largest " +
                  std::to_string(largest) + "): widened by the spread between scales (" +
                  std::to_string(static_cast<int>(std::lround(100 * sd))) + "%)");
  }
  const bool any_extrapolated = std::any_of(regime.begin(), regime.end(), [](const CaseError* c) { return c->extrapolated; });
  if (q.extrapolated && !any_extrapolated) {
    Cases beyond;
    for (const CaseError* c : pool)
      if (c->extrapolated) beyond.push_back(c);
    const double sd = beyond.size() >= 2 ? weighted_stats(beyond).sd : between_values_sd(pool, Dim::gpu);
    variance += sd * sd;
    why.push_back("ops priced beyond the measured tables, where no case of the regime was: widened by " +
                  std::to_string(static_cast<int>(std::lround(100 * sd))) + "%");
  }
  return variance;
}

TrustInterval interval_from(const Cases& all, const TrustQuery& q, double predicted) {
  TrustInterval t;
  Cases regime;
  std::vector<Dim> dims;
  for (const std::vector<Dim>& level : kLevels) {
    regime = select(all, q.regime, level);
    dims = level;
    if (static_cast<int>(regime.size()) >= kMinCases) break;
  }
  Cases pool = select(all, q.regime, {Dim::workload});
  if (pool.size() < 2) pool = all;
  const Stats s = weighted_stats(regime);
  t.bias = s.mean;
  t.regime = regime_name(q.regime, dims);
  t.level = level_name(dims);
  t.cases = static_cast<int>(regime.size());
  t.sources = s.sources;
  t.effective_cases = s.effective;
  t.validated = !select(all, q.regime, kRegimeDims).empty();
  // the normal prediction interval's half-width in log space, the widening's variance beside
  // the regime's own
  const double t_quantile = t90(static_cast<int>(std::floor(s.effective)) - 1);
  const double variance = s.sd * s.sd * (1 + 1 / std::max(s.effective, 1.0)) + widening_variance(regime, pool, q, t.reasons);
  const double half = t_quantile * std::sqrt(variance);
  // measured = predicted / exp(log ratio): the slow end takes the low log ratio
  t.low = predicted * std::exp(-(s.mean + half));
  t.high = predicted * std::exp(-(s.mean - half));
  t.half_width = predicted > 0 ? (t.high - t.low) / 2 / predicted : 0;
  return t;
}

Cases pointers(const std::vector<CaseError>& cases) {
  Cases out;
  for (const CaseError& c : cases) out.push_back(&c);
  return out;
}

}  // namespace

TrustInterval trust_interval(const std::vector<CaseError>& cases, const TrustQuery& query, double predicted) {
  return interval_from(pointers(cases), query, predicted);
}

nlohmann::json interval_json(const TrustInterval& t) { return nlohmann::json::array({t.low, t.high}); }

nlohmann::json basis_json(const TrustInterval& t) {
  return {{"coverage", kCoverage},   {"regime", t.regime},   {"level", t.level},
          {"cases", t.cases},        {"sources", t.sources}, {"effective_cases", t.effective_cases},
          {"bias", std::exp(t.bias) - 1}, {"half_width", t.half_width}, {"validated", t.validated},
          {"reasons", t.reasons}};
}

Coverage leave_one_out_coverage(const std::vector<CaseError>& cases) {
  const Cases all = pointers(cases);
  std::map<std::string, std::vector<double>> widths;
  std::map<std::string, CoverageRow> rows;
  std::vector<double> all_widths;
  Coverage c;
  for (std::size_t i = 0; i < all.size(); ++i) {
    Cases others = all;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    const CaseError& judged = *all[i];
    const TrustQuery q{judged.regime, judged.gpus, judged.extrapolated};
    const TrustInterval t = interval_from(others, q, 1.0);
    const double measured = std::exp(-judged.log_ratio);  // of a prediction of 1
    const bool covered = measured >= t.low && measured <= t.high;
    const std::string name = regime_name(judged.regime, kRegimeDims);
    CoverageRow& row = rows[name];
    row.regime = name;
    ++row.cases;
    row.covered += covered;
    widths[name].push_back(t.half_width);
    all_widths.push_back(t.half_width);
    ++c.overall.cases;
    c.overall.covered += covered;
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  c.overall.regime = "all";
  c.overall.median_half_width = median(all_widths);
  for (auto& [name, row] : rows) {
    row.median_half_width = median(widths[name]);
    c.by_regime.push_back(row);
  }
  return c;
}

std::string coverage_table(const Coverage& c) {
  std::string out = "regime,cases,covered,coverage,median_half_width\n";
  auto line = [&](const CoverageRow& r) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s,%d,%d,%.3f,%.3f\n", r.regime.c_str(), r.cases, r.covered,
                  r.cases ? static_cast<double>(r.covered) / r.cases : 0.0, r.median_half_width);
    out += buf;
  };
  for (const CoverageRow& r : c.by_regime) line(r);
  line(c.overall);
  return out;
}

}  // namespace twinsim::trust
