// plan.gradient_compression int8 / int4 on the wire (exec/train/quantized_exchange.hpp), on
// `mpirun -np R` ranks: the reduced values against the fp32 sum of every rank's gradients,
// within the quantisation's own error (half a step of each quantised block: absmax / 127 / 2
// for int8, absmax / 7 / 2 for int4), and the bytes each rank sends against the simulator's
// count (models/quantized_grads.hpp: 1 + 4 / 2048 bytes a value for int8, 0.5 + 4 / 2048 for
// int4, (R - 1) / R of the buffer per pass as nccl-tests counts it). Exit status 0 on success.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "exec/runtime/mpi_communicator.hpp"
#include "exec/train/quantized_exchange.hpp"
#include "models/quantized_grads.hpp"

using namespace twinsim;
using namespace twinsim::exec;

namespace {

// Rank r's gradients: smooth values of a rank-dependent size, one large value per block.
std::vector<float> gradients(int rank, std::size_t n) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i)
    g[i] = 0.01f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank)) * static_cast<float>(1 + rank);
  for (std::size_t i = 5; i < n; i += 2048) g[i] = 0.05f * static_cast<float>(1 + rank);
  return g;
}

// The largest |value| of the block (2,048 values from `first`) holding index i.
double block_absmax(const std::vector<double>& values, std::size_t first, std::size_t i) {
  const std::size_t lo = first + (i - first) / 2048 * 2048, hi = std::min(values.size(), lo + 2048);
  double absmax = 0;
  for (std::size_t j = lo; j < hi; ++j) absmax = std::max(absmax, std::fabs(values[j]));
  return absmax;
}

// Half a quantisation step of a block of that absmax.
double half_step(double absmax, GradCompression kind) { return absmax / (kind == GradCompression::int8 ? 127 : 7) / 2; }

int check(const char* what, bool ok, double got, double want) {
  if (ok) return 0;
  std::fprintf(stderr, "%s: got %.9g, want %.9g\n", what, got, want);
  return 1;
}

// Reduce-scatter of R x count values: this rank's chunk is its own values exact plus every
// other rank's quantised. Then an all-reduce of n values (the last chunk padded).
int run(Communicator& world, GradCompression kind) {
  const int ranks = world.size(), me = world.rank();
  const std::size_t count = 2 * 2048, n = static_cast<std::size_t>(ranks) * count;
  std::vector<std::vector<double>> all;
  std::vector<double> sum(n, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<float> g = gradients(r, n);
    all.emplace_back(g.begin(), g.end());
    for (std::size_t i = 0; i < n; ++i) sum[i] += g[i];
  }
  int failures = 0;
  const std::vector<float> g = gradients(me, n);
  std::vector<float> mine(count);
  const std::int64_t before = world.traffic().bytes_sent;
  quantized_reduce_scatter(g.data(), mine.data(), count, kind, world);
  const std::int64_t sent = world.traffic().bytes_sent - before;
  const double wire = (ranks - 1.0) * static_cast<double>(count) * quantized_grad_bytes_per_value(kind);
  failures += check("reduce-scatter bytes sent", static_cast<double>(sent) == wire, static_cast<double>(sent), wire);
  double worst = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = static_cast<std::size_t>(me) * count + i;
    double bound = 1e-6 * std::fabs(sum[at]);
    for (int r = 0; r < ranks; ++r)
      if (r != me)
        bound +=
            half_step(block_absmax(all[static_cast<std::size_t>(r)], static_cast<std::size_t>(me) * count, at), kind);
    worst = std::max(worst, std::fabs(mine[i] - sum[at]));
    failures += check("reduce-scatter value within the steps", std::fabs(mine[i] - sum[at]) <= bound, mine[i], sum[at]);
    if (failures > 5) return failures;
  }
  failures += check("reduce-scatter is quantised", worst > 0, worst, 0);
  // the all-reduce: the scatter's bound (taken over every rank's blocks, the owner's too,
  // which stay exact: a looser bound) plus half a step of the summed block, whose absmax is
  // at most the exact sum's plus that bound; every rank holds the same values
  std::vector<float> whole = gradients(me, n);
  const std::int64_t before_all = world.traffic().bytes_sent;
  quantized_all_reduce(whole.data(), n, kind, world);
  const double sent_all = static_cast<double>(world.traffic().bytes_sent - before_all);
  failures += check("all-reduce bytes sent (two passes)", sent_all == 2 * wire, sent_all, 2 * wire);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = i / count * count;
    double scatter = 0;
    for (int r = 0; r < ranks; ++r)
      scatter += half_step(block_absmax(all[static_cast<std::size_t>(r)], first, i), kind);
    const double bound = 1e-6 * std::fabs(sum[i]) + scatter + half_step(block_absmax(sum, first, i) + scatter, kind);
    failures += check("all-reduce value within the steps", std::fabs(whole[i] - sum[i]) <= bound, whole[i], sum[i]);
    if (failures > 5) return failures;
  }
  std::vector<float> first_rank = whole;
  world.broadcast(first_rank.data(), n, 0);
  failures += check("all-reduce alike on every rank", first_rank == whole, 0, 0);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  auto world = MpiCommunicator::world();
  int failures = run(*world, GradCompression::int8) + run(*world, GradCompression::int4);
  if (world->rank() == 0) std::printf("quantized exchange on %d ranks: %d failures\n", world->size(), failures);
  return failures == 0 ? 0 : 1;
}
