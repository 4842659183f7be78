#include "sim/search/pareto.hpp"

#include <algorithm>

namespace twinsim {

namespace {

bool no_worse(const ParetoPoint& a, const ParetoPoint& b) {
  return a.step_s <= b.step_s && a.peak_bytes <= b.peak_bytes && a.gpus <= b.gpus;
}

bool same_point(const ParetoPoint& a, const ParetoPoint& b) {
  return a.step_s == b.step_s && a.peak_bytes == b.peak_bytes && a.gpus == b.gpus;
}

// a removes b from the front
bool beats(const ParetoPoint& a, const ParetoPoint& b) {
  if (!no_worse(a, b)) return false;
  return !same_point(a, b) || canonical_less(a.plan, b.plan);
}

}  // namespace

// Field by field in the printed order (sim/search/candidate.hpp); a choice by its value's
// place in the enum.
bool canonical_less(const Candidate& a, const Candidate& b) {
  int order = 0;  // <0: a first, >0: b first, 0: alike so far
  auto compare = [&](auto x, auto y) {
    if (order == 0 && x != y) order = x < y ? -1 : 1;
  };
  for_each_candidate_field([&](const auto& knob) { compare(a.*knob.member, b.*knob.member); },
                           [&] { compare(a.micro_batch, b.micro_batch); });
  return order < 0;
}

void ParetoFront::add(const ParetoPoint& p) {
  for (const ParetoPoint& q : points_)
    if (beats(q, p) || (same_point(q, p) && !canonical_less(p.plan, q.plan))) return;
  std::erase_if(points_, [&](const ParetoPoint& q) { return beats(p, q); });
  points_.push_back(p);
}

std::vector<ParetoPoint> ParetoFront::sorted() const {
  std::vector<ParetoPoint> out = points_;
  std::sort(out.begin(), out.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    if (a.step_s != b.step_s) return a.step_s < b.step_s;
    return canonical_less(a.plan, b.plan);
  });
  return out;
}

}  // namespace twinsim
