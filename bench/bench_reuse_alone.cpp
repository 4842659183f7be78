// The decode GEMMs' reuse curve of one process alone, as `twinsim calibrate` measures it
// after its co-runners stop (calibrate/compute_rounds.hpp reuse_sweeps_alone; the file's
// gemm_reuse_time_alone), without the rest of a calibration (issue 61: a paired A/B beside
// a validate of a single-rank serving case, whose L3 is what the machine leaves it now).
// usage: bench_reuse_alone [ROUNDS]  (default 9, calibrate's 3 x --rounds 3); prints the
// curve as the file's key and each working set's median call.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/compute_rounds.hpp"

int main(int argc, char** argv) {
  namespace cal = twinsim::calibrate;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  cal::Calibration c;
  cal::reuse_sweeps_alone(c, cal::SweepOptions{}, rounds, [](const std::string&) {});
  std::printf("  gemm_reuse_time_alone:\n");
  for (const cal::CurvePoint& p : cal::reuse_time_curve(c.memory, cal::kGemmReuseAloneKernel))
    std::printf("    - [%.0f, %.4f]\n", p.size, p.efficiency);
  for (const cal::MemoryPoint& p : c.memory)
    std::printf("# %.0f B: median %.2f us a call, spread %.0f%%\n", p.bytes, p.seconds.median * 1e6,
                p.seconds.spread() * 100);
  return 0;
}
