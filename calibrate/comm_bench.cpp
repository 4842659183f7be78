#include "calibrate/comm_bench.hpp"

#include <algorithm>
#include <functional>

#include "calibrate/compute_bench.hpp"
#include "calibrate/samples.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/optimizer.hpp"

namespace twinsim::calibrate {

namespace {

// A training step calls a collective after ops that went through megabytes of weights and
// activations: the communicator's buffers and MPI's shared-memory segments are out of the
// caches, and the input was just written by the op that made it. So before every call,
// each rank writes `evict_bytes` of its own, then rewrites the call's input, then the
// ranks meet at a barrier; the call alone is timed, a repeat's time the slowest rank's.
// (Back to back on the same buffers, an all-gather of 2 MiB ran 3.5x faster than amid
// such work: exec/runtime/README.md, bench_comm's *_amid_work cases.)
class StepLikeCalls {
 public:
  StepLikeCalls(exec::Communicator& comm, double evict_bytes)
      : comm_(comm), evict_(static_cast<std::size_t>(evict_bytes / sizeof(float))) {}

  Stats time(const std::function<void()>& write_input, const std::function<void()>& call, int repeats) {
    write_input();
    call();  // warm-up: MPI's connection set-up and buffer registration
    std::vector<double> per_call;
    for (int r = 0; r < repeats; ++r) {
      std::fill(evict_.begin(), evict_.end(), static_cast<float>(r));
      write_input();
      comm_.barrier();
      const double t0 = now_s();
      call();
      float t = static_cast<float>(now_s() - t0);
      comm_.all_reduce(&t, 1, exec::ReduceOp::max);
      per_call.push_back(t);
    }
    return stats_of(per_call);
  }

 private:
  exec::Communicator& comm_;
  std::vector<float> evict_;
};

}  // namespace

double CommPoint::bus_factor() const {
  const double n = ranks;
  if (op == "all_reduce") return 2 * (n - 1) / n;
  // all-to-all: each rank keeps its 1/n and sends the rest (the simulator's direct exchange)
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return (n - 1) / n;
  return 1;
}

std::vector<double> comm_sizes(bool quick) {
  if (quick) return {4096, 262144, 4194304};
  std::vector<double> s;
  for (double b = 4096; b <= 16777216; b *= 4) s.push_back(b);
  return s;
}

std::vector<CommPoint> comm_sweep(exec::Communicator& comm, const CommSweepOptions& o) {
  std::vector<CommPoint> out;
  const int n = comm.size(), me = comm.rank();
  StepLikeCalls calls(comm, o.evict_bytes);
  const int repeats = 3 * o.repeats;  // single calls: more of them than the repeats of a batch
  for (double bytes : comm_sizes(o.quick)) {
    const std::size_t count = static_cast<std::size_t>(bytes / sizeof(float));
    const std::size_t part = count / n;
    std::vector<float> a(count), b(count);
    auto write_a = [&] { std::fill(a.begin(), a.end(), 1.0f); };
    out.push_back({"all_reduce", n, bytes, calls.time(write_a, [&] { comm.all_reduce(a.data(), count); }, repeats)});
    out.push_back({"all_gather", n, static_cast<double>(part * n * sizeof(float)),
                   calls.time(write_a, [&] { comm.all_gather(a.data(), b.data(), part); }, repeats)});
    out.push_back({"reduce_scatter", n, static_cast<double>(part * n * sizeof(float)),
                   calls.time(write_a, [&] { comm.reduce_scatter(a.data(), b.data(), part); }, repeats)});
    // expert parallelism's token exchange (a MoE layer's dispatch and combine) as the executor
    // runs it (exec/model/moe_block.cpp): part r of `bytes` to rank r, pairwise, rank me
    // sending to me + k while receiving from me - k, k = 1 .. n - 1 (as NCCL runs an all-to-all)
    out.push_back({"all_to_all", n, static_cast<double>(part * n * sizeof(float)),
                   calls.time(
                       write_a,
                       [&] {
                         for (int k = 1; k < n; ++k) {
                           const int to = (me + k) % n, from = (me - k + n) % n;
                           comm.send_recv(a.data() + to * part, part, to, b.data() + from * part, part, from);
                         }
                       },
                       repeats)});
    // a ring exchange, as the pipeline's paired send/recv: each rank sends `bytes` to the
    // next and receives as much from the previous
    out.push_back({"send_recv", n, bytes, calls.time(write_a, [&] {
                     comm.send_recv(a.data(), count, (me + 1) % n, b.data(), count, (me + n - 1) % n);
                   }, repeats)});
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
