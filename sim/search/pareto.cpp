#include "sim/search/pareto.hpp"

#include <algorithm>
#include <tuple>

namespace twinsim {

namespace {

auto key(const Candidate& c) {
  return std::make_tuple(c.tp, c.pp, c.dp, c.cp, c.ep, c.micro_batch, c.zero, static_cast<int>(c.recompute),
                         static_cast<int>(c.schedule), c.virtual_stages, c.sequence_parallel, c.overlap_grad_reduce,
                         c.overlap_param_gather, c.tp_comm_overlap, c.offload_optimizer);
}

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

bool canonical_less(const Candidate& a, const Candidate& b) { return key(a) < key(b); }

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
