#include "calibrate/core_sharing.hpp"

#include <sched.h>

#include <algorithm>
#include <functional>

#include "calibrate/co_runners.hpp"
#include "calibrate/samples.hpp"

namespace twinsim::calibrate {

namespace {

// This process on its first allowed CPU for the object's life (where mpirun binds a
// single-rank case's rank and CoRunners puts the timing process).
class PinnedToFirstCpu {
 public:
  PinnedToFirstCpu() {
    CPU_ZERO(&original_);
    sched_getaffinity(0, sizeof original_, &original_);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &original_)) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        pinned_ = sched_setaffinity(0, sizeof one, &one) == 0;  // best effort
        break;
      }
  }
  ~PinnedToFirstCpu() {
    if (pinned_) sched_setaffinity(0, sizeof original_, &original_);
  }
  PinnedToFirstCpu(const PinnedToFirstCpu&) = delete;
  PinnedToFirstCpu& operator=(const PinnedToFirstCpu&) = delete;

 private:
  cpu_set_t original_;
  bool pinned_ = false;
};

std::string gemm_name(const GemmPoint& g) {
  return "gemm " + std::string(to_string(g.dtype)) + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
         std::to_string(g.k) + (g.pass == GemmPass::fwd ? " fwd" : g.pass == GemmPass::dgrad ? " dgrad" : " wgrad");
}

std::string memory_name(const MemoryPoint& m) {
  return m.kernel + (m.half ? " bf16" : "") + (m.backward ? " bwd " : " ") + std::to_string(static_cast<long>(m.bytes)) + " B";
}

// The sweep's points alone, then with the others running it.
template <class Point>
std::pair<std::vector<Point>, std::vector<Point>> alone_and_shared(const std::function<std::vector<Point>()>& sweep,
                                                                   int busy_processes) {
  std::vector<Point> alone, shared;
  {
    const PinnedToFirstCpu pin;
    alone = sweep();
  }
  {
    const CoRunners others(busy_processes, [&sweep] { sweep(); });
    shared = sweep();
  }
  return {alone, shared};
}

}  // namespace

void fit_core_sharing(CoreSharing& sharing) {
  std::vector<double> gemm, memory;
  for (const SharingPoint& p : sharing.points) (p.gemm ? gemm : memory).push_back(p.speedup());
  // no points of a kind: no measured slowdown, a speedup of 1
  sharing.gemm_speedup = gemm.empty() ? 1 : median_of(gemm);
  sharing.memory_speedup = memory.empty() ? 1 : median_of(memory);
}

CoreSharing measure_core_sharing(const SweepOptions& o, int busy_processes) {
  CoreSharing sharing;
  sharing.busy_processes = busy_processes;
  if (busy_processes < 2) return sharing;
  SweepOptions quick = o;
  quick.quick = true;
  const auto [gemm_alone, gemm_shared] =
      alone_and_shared<GemmPoint>([&quick] { return gemm_sweep(quick); }, busy_processes);
  for (std::size_t i = 0; i < gemm_alone.size() && i < gemm_shared.size(); ++i)
    sharing.points.push_back({gemm_name(gemm_alone[i]), true, gemm_alone[i].seconds, gemm_shared[i].seconds});
  const auto [memory_alone, memory_shared] =
      alone_and_shared<MemoryPoint>([&quick] { return memory_sweep(quick); }, busy_processes);
  for (std::size_t i = 0; i < memory_alone.size() && i < memory_shared.size(); ++i)
    sharing.points.push_back({memory_name(memory_alone[i]), false, memory_alone[i].seconds, memory_shared[i].seconds});
  fit_core_sharing(sharing);
  return sharing;
}

}  // namespace twinsim::calibrate
