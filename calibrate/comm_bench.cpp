#include "calibrate/comm_bench.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include "calibrate/compute_bench.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/optimizer.hpp"

namespace twinsim::calibrate {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every rank runs the same number of calls (a count agreed on, never a local clock), so
// ranks stay in step; the repeat's time is the slowest rank's.
Stats time_collective(exec::Communicator& comm, const std::function<void()>& call, int repeats, int calls) {
  call();  // warm-up: MPI's connection set-up and buffer registration
  std::vector<double> per_call;
  for (int r = 0; r < repeats; ++r) {
    comm.barrier();
    const double t0 = now_s();
    for (int i = 0; i < calls; ++i) call();
    float t = static_cast<float>((now_s() - t0) / calls);
    comm.all_reduce(&t, 1, exec::ReduceOp::max);
    per_call.push_back(t);
  }
  return stats_of(per_call);
}

// Enough calls that a repeat lasts about 20 ms at 1 GB/s (longer than a scheduler time
// slice on a shared machine), at least 5.
int calls_for(double bytes) { return std::clamp(static_cast<int>(2e7 / std::max(bytes, 1.0)), 5, 2000); }

}  // namespace

double CommPoint::bus_factor() const {
  const double n = ranks;
  if (op == "all_reduce") return 2 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1) / n;
  return 1;
}

std::vector<double> comm_sizes(bool quick) {
  if (quick) return {4096, 262144, 4194304};
  std::vector<double> s;
  for (double b = 4096; b <= 16777216; b *= 4) s.push_back(b);
  return s;
}

std::vector<CommPoint> comm_sweep(exec::Communicator& comm, bool quick, int repeats) {
  std::vector<CommPoint> out;
  const int n = comm.size(), me = comm.rank();
  for (double bytes : comm_sizes(quick)) {
    const std::size_t count = static_cast<std::size_t>(bytes / sizeof(float));
    const std::size_t part = count / n;
    // calls rotate through buffer sets out of cache, as a step's gradient buckets are (one
    // 16 MiB pair reused call after call sat in the L3: all-gather 2.9 GB/s busbw against
    // 2.3-2.4 rotated, this host, 2026-11-22)
    const int sets = cold_sets(2 * static_cast<std::size_t>(bytes));
    std::vector<std::vector<float>> a(sets, std::vector<float>(count, 1.0f)), b(sets, std::vector<float>(count, 0.0f));
    int k = 0;
    auto next = [&] { return k = (k + 1) % sets; };
    const int calls = calls_for(bytes);
    out.push_back({"all_reduce", n, bytes, time_collective(comm, [&] { comm.all_reduce(a[next()].data(), count); }, repeats, calls)});
    out.push_back({"all_gather", n, static_cast<double>(part * n * sizeof(float)), time_collective(comm, [&] {
                     const int j = next();
                     comm.all_gather(a[j].data(), b[j].data(), part);
                   }, repeats, calls)});
    out.push_back({"reduce_scatter", n, static_cast<double>(part * n * sizeof(float)), time_collective(comm, [&] {
                     const int j = next();
                     comm.reduce_scatter(a[j].data(), b[j].data(), part);
                   }, repeats, calls)});
    // a ring exchange, as the pipeline's paired send/recv: each rank sends `bytes` to the
    // next and receives as much from the previous
    out.push_back({"send_recv", n, bytes, time_collective(comm, [&] {
                     const int j = next();
                     comm.send_recv(a[j].data(), count, (me + 1) % n, b[j].data(), count, (me + n - 1) % n);
                   }, repeats, calls)});
  }
  return out;
}

Stats straggler_sweep(exec::Communicator& comm, int repeats) {
  // a step's mix in small: an fc1 of the executor's small models, its GeLU, and an AdamW
  // update of 1 Mi parameters (compute-, math- and memory-bound)
  constexpr int kRows = 128, kIn = 256, kOut = 1024;
  constexpr std::size_t kParams = 1u << 20;
  std::vector<float> x(static_cast<std::size_t>(kRows) * kIn, 0.5f), w(static_cast<std::size_t>(kOut) * kIn, 0.01f),
      y(static_cast<std::size_t>(kRows) * kOut), z(y.size()), p(kParams, 0.1f), g(kParams, 0.01f), m(kParams), v(kParams);
  int step = 0;
  auto work = [&] {
    kernels::cpu::linear_forward(x.data(), w.data(), nullptr, y.data(), kRows, kIn, kOut);
    kernels::cpu::gelu_forward(y.data(), z.data(), static_cast<long>(y.size()));
    kernels::cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), static_cast<long>(kParams), ++step,
                             kernels::cpu::AdamWConfig{});
  };
  // the number of calls rank 0 finds lasts 50 ms (a small training step); every rank runs that many
  work();
  double t0 = now_s();
  work();
  float calls = static_cast<float>(std::clamp(0.05 / std::max(now_s() - t0, 1e-9), 1.0, 1e5));
  comm.broadcast(&calls, 1, 0);
  std::vector<double> fractions;
  std::vector<float> all(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < 3 * repeats; ++r) {
    comm.barrier();
    t0 = now_s();
    for (int i = 0; i < static_cast<int>(calls); ++i) work();
    const float mine = static_cast<float>(now_s() - t0);
    comm.all_gather(&mine, all.data(), 1);
    double sum = 0, most = 0;
    for (float t : all) sum += t, most = std::max(most, static_cast<double>(t));
    fractions.push_back(most / (sum / static_cast<double>(all.size())) - 1);
  }
  return stats_of(fractions);
}

}  // namespace twinsim::calibrate
