#pragma once
// The Pareto front of fitting plans over (step time, peak memory per GPU, GPU count),
// all three minimised: a plan stays when no other is at least as good in all three
// and better in one. Among exactly equal points the canonically smallest plan stays,
// so the front does not depend on the order plans arrive in (an MPI merge of shards
// gives the single-process answer).
#include <cstdint>
#include <vector>

#include "sim/search/candidate.hpp"

namespace twinsim {

struct ParetoPoint {
  double step_s = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t gpus = 0;
  Candidate plan;
};

// Strict weak order on plans, used to break ties deterministically.
bool canonical_less(const Candidate& a, const Candidate& b);

class ParetoFront {
 public:
  ParetoFront() { points_.reserve(1024); }
  void add(const ParetoPoint& p);  // no allocation unless the front grows past its capacity
  const std::vector<ParetoPoint>& points() const { return points_; }
  // Sorted by GPUs, then step time.
  std::vector<ParetoPoint> sorted() const;

 private:
  std::vector<ParetoPoint> points_;
};

}  // namespace twinsim
