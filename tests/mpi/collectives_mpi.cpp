// Every collective of MpiCommunicator, checked on each rank against the value computed
// there by a plain loop over what each rank contributed. Runs on any number of ranks,
// including 1 (started without mpirun: Open MPI's singleton mode).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/mpi_communicator.hpp"
#include "exec/runtime/profiler.hpp"
#include "tests/mpi/mpi_check.hpp"

using namespace twinsim::exec;

namespace {

// What rank r contributes at index i: distinct, exactly representable in float.
float value(int r, std::size_t i) { return 1000.0f * static_cast<float>(r) + static_cast<float>(i) + 0.5f; }
// Not monotonic in r, so max is not simply the last rank's.
float wiggly(int r, std::size_t i) { return static_cast<float>((r * 7 + static_cast<int>(i) * 3) % 11); }

// (built with append: GCC 12 warns falsely on "literal" + std::string&&, PR 105329)
std::string at(std::size_t i, float got, float want) {
  std::string s = "[";
  s.append(std::to_string(i)).append("] got ").append(std::to_string(got));
  return s.append(" want ").append(std::to_string(want));
}

std::string rank_tag(int r) {
  std::string s = "r";
  return s.append(std::to_string(r)).append(";");
}

void check_all_reduce(Communicator& c) {
  const std::size_t n = 7;
  std::vector<float> sum(n), mx(n);
  for (std::size_t i = 0; i < n; ++i) {
    sum[i] = value(c.rank(), i);
    mx[i] = wiggly(c.rank(), i);
  }
  c.all_reduce(sum.data(), n);
  c.all_reduce(mx.data(), n, ReduceOp::max);
  for (std::size_t i = 0; i < n; ++i) {
    float want_sum = 0, want_max = -1;
    for (int r = 0; r < c.size(); ++r) {
      want_sum += value(r, i);
      want_max = std::max(want_max, wiggly(r, i));
    }
    MPI_CHECK(sum[i] == want_sum, "all_reduce sum " + at(i, sum[i], want_sum));
    MPI_CHECK(mx[i] == want_max, "all_reduce max " + at(i, mx[i], want_max));
  }
}

void check_all_gather(Communicator& c) {
  const std::size_t n = 3, p = static_cast<std::size_t>(c.size());
  std::vector<float> mine(n), all(n * p, -1.0f);
  for (std::size_t i = 0; i < n; ++i) mine[i] = value(c.rank(), i);
  c.all_gather(mine.data(), all.data(), n);
  auto check_all = [&](const char* what) {
    for (std::size_t r = 0; r < p; ++r)
      for (std::size_t i = 0; i < n; ++i)
        MPI_CHECK(all[r * n + i] == value(static_cast<int>(r), i),
                  what + at(r * n + i, all[r * n + i], value(static_cast<int>(r), i)));
  };
  check_all("all_gather ");
  // in place: this rank's part already sits in the output (Megatron's parameter buffer)
  std::fill(all.begin(), all.end(), -1.0f);
  float* own = all.data() + static_cast<std::size_t>(c.rank()) * n;
  std::copy(mine.begin(), mine.end(), own);
  c.all_gather(own, all.data(), n);
  check_all("all_gather in place ");
}

void check_reduce_scatter(Communicator& c) {
  // growing then shrinking counts: the ring's scratch is kept from call to call
  for (const std::size_t n : {4, 9, 2}) {
    const std::size_t p = static_cast<std::size_t>(c.size());
    std::vector<float> send(n * p), part(n, -1.0f);
    for (std::size_t j = 0; j < n * p; ++j) send[j] = value(c.rank(), j);
    c.reduce_scatter(send.data(), part.data(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = static_cast<std::size_t>(c.rank()) * n + i;
      float want = 0;
      for (int r = 0; r < c.size(); ++r) want += value(r, j);
      MPI_CHECK(part[i] == want, "reduce_scatter " + at(i, part[i], want));
    }
    // in place: the rank's own chunk of the send buffer receives the sum (Megatron's bucket)
    float* own = send.data() + static_cast<std::size_t>(c.rank()) * n;
    c.reduce_scatter(send.data(), own, n);
    for (std::size_t i = 0; i < n; ++i) MPI_CHECK(own[i] == part[i], "reduce_scatter in place " + at(i, own[i], part[i]));
  }
}

void check_all_to_all(Communicator& c) {
  const std::size_t n = 2, p = static_cast<std::size_t>(c.size());
  std::vector<float> send(n * p), recv(n * p, -1.0f);
  for (std::size_t j = 0; j < n * p; ++j) send[j] = value(c.rank(), j);  // part d goes to rank d
  c.all_to_all(send.data(), recv.data(), n);
  for (std::size_t src = 0; src < p; ++src)
    for (std::size_t i = 0; i < n; ++i) {
      // part src of recv is what rank src put in its part for us
      const float want = value(static_cast<int>(src), static_cast<std::size_t>(c.rank()) * n + i);
      MPI_CHECK(recv[src * n + i] == want, "all_to_all " + at(src * n + i, recv[src * n + i], want));
    }
}

void check_broadcast_and_p2p(Communicator& c) {
  const int root = c.size() - 1;
  std::vector<float> data(5, -1.0f);
  if (c.rank() == root)
    for (std::size_t i = 0; i < 5; ++i) data[i] = value(root, i);
  c.broadcast(data.data(), 5, root);
  for (std::size_t i = 0; i < 5; ++i) MPI_CHECK(data[i] == value(root, i), "broadcast " + at(i, data[i], value(root, i)));

  // a pipeline: stage r sends to r + 1 and receives from r - 1; the ends skip a half
  const int next = c.rank() + 1 < c.size() ? c.rank() + 1 : -1;
  const int prev = c.rank() > 0 ? c.rank() - 1 : -1;
  std::vector<float> out(3), in(3, -1.0f);
  for (std::size_t i = 0; i < 3; ++i) out[i] = value(c.rank(), i);
  c.send_recv(out.data(), 3, next, in.data(), 3, prev);
  if (prev >= 0)
    for (std::size_t i = 0; i < 3; ++i) MPI_CHECK(in[i] == value(prev, i), "send_recv " + at(i, in[i], value(prev, i)));
  else
    MPI_CHECK(in[0] == -1.0f, "send_recv from no peer must leave the buffer");

  // blocking send/recv between pairs (0 -> 1, 2 -> 3, ...)
  if (c.size() >= 2) {
    float x = value(c.rank(), 9);
    if (c.rank() % 2 == 0 && c.rank() + 1 < c.size()) c.send(&x, 1, c.rank() + 1);
    if (c.rank() % 2 == 1) {
      c.recv(&x, 1, c.rank() - 1);
      MPI_CHECK(x == value(c.rank() - 1, 9), "send/recv " + at(0, x, value(c.rank() - 1, 9)));
    }
  }
  c.barrier();
}

void check_gather_bytes(Communicator& c) {
  // rank r sends r copies of "r<r>;" (rank 0 sends nothing)
  std::string mine;
  for (int k = 0; k < c.rank(); ++k) mine += rank_tag(c.rank());
  const std::vector<std::string> all = c.gather_bytes(mine, 0);
  if (c.rank() != 0) {
    MPI_CHECK(all.empty(), "gather_bytes off the root must be empty");
    return;
  }
  MPI_CHECK(static_cast<int>(all.size()) == c.size(), "gather_bytes size " + std::to_string(all.size()));
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    std::string want;
    for (int k = 0; k < r; ++k) want += rank_tag(r);
    MPI_CHECK(all[static_cast<std::size_t>(r)] == want, "gather_bytes rank " + std::to_string(r));
  }
}

void check_split(Communicator& c) {
  // two colors by parity, ordered by descending world rank; rank 1 (if any) opts out
  const bool out = c.rank() == 1;
  const auto sub = c.split(out ? -1 : c.rank() % 2, -c.rank());
  if (out) {
    MPI_CHECK(sub == nullptr, "a negative color must give no communicator");
    return;
  }
  std::vector<int> members;  // same color, not opted out, highest world rank first
  for (int r = c.size() - 1; r >= 0; --r)
    if (r % 2 == c.rank() % 2 && r != 1) members.push_back(r);
  MPI_CHECK(sub && sub->size() == static_cast<int>(members.size()), "split size");
  if (!sub) return;
  const int want_rank = static_cast<int>(std::find(members.begin(), members.end(), c.rank()) - members.begin());
  MPI_CHECK(sub->rank() == want_rank, "split rank " + std::to_string(sub->rank()) + " want " + std::to_string(want_rank));
  float s = static_cast<float>(c.rank());
  sub->all_reduce(&s, 1);
  float want = 0;
  for (int r : members) want += static_cast<float>(r);
  MPI_CHECK(s == want, "all_reduce in a split group " + at(0, s, want));
}

void check_errors(Communicator& c) {
  bool threw = false;
  try {
    c.all_reduce(nullptr, std::size_t{1} << 31);
  } catch (const std::length_error&) {
    threw = true;
  }
  MPI_CHECK(threw, "a count beyond INT_MAX must throw before calling MPI");
  threw = false;
  float x = 0;
  try {
    c.broadcast(&x, 1, c.size() + 5);  // no such root: every rank's MPI_Bcast returns MPI_ERR_ROOT
  } catch (const MpiError& e) {
    threw = std::string(e.what()).find("MPI_Bcast") != std::string::npos;
  }
  MPI_CHECK(threw, "an invalid root must throw MpiError naming MPI_Bcast");
}

// Rank r records r + 1 events of "op.r<r>" and one shared op; rank 0's trace has a track
// per rank with exactly those events and the summary counts them.
void check_profiler_gather(Communicator& c) {
  Profiler p(c.rank());
  p.align_origin(c);
  const auto t0 = Profiler::Clock::now();
  const std::string own = "op.r" + std::to_string(c.rank());
  for (int k = 0; k <= c.rank(); ++k) p.record(own, t0, t0 + std::chrono::microseconds(10 * (k + 1)));
  p.record("layer0.attn.qkv.fwd", t0, t0 + std::chrono::milliseconds(c.rank() + 1));
  const nlohmann::json trace = p.gather_chrome_trace(c);
  const nlohmann::json summary = p.gather_summary(c);
  if (c.rank() != 0) {
    MPI_CHECK(trace.is_null() && summary.is_null(), "trace and summary only on rank 0");
    return;
  }
  std::vector<int> per_track(static_cast<std::size_t>(c.size()), 0);
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int tid = e["tid"].get<int>();
    MPI_CHECK(tid >= 0 && tid < c.size(), "track id " + std::to_string(tid));
    if (tid < 0 || tid >= c.size()) continue;
    const std::string name = e["name"];
    MPI_CHECK(name == "op.r" + std::to_string(tid) || name == "layer0.attn.qkv.fwd", "event " + name + " on track " + std::to_string(tid));
    per_track[static_cast<std::size_t>(tid)]++;
  }
  for (int r = 0; r < c.size(); ++r)
    MPI_CHECK(per_track[static_cast<std::size_t>(r)] == r + 2, "events on track " + std::to_string(r));
  const auto& qkv = summary["ops"]["layer0.attn.qkv.fwd"];
  MPI_CHECK(qkv["count"] == c.size() && qkv["ranks"] == c.size(), "summary count of the shared op");
  // the slowest rank took size() ms
  MPI_CHECK(std::abs(qkv["max_total_s"].get<double>() - 1e-3 * c.size()) < 1e-9, "summary max of the shared op");
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  auto world = MpiCommunicator::world();
  check_all_reduce(*world);
  check_all_gather(*world);
  check_reduce_scatter(*world);
  check_all_to_all(*world);
  check_broadcast_and_p2p(*world);
  check_gather_bytes(*world);
  check_split(*world);
  check_errors(*world);
  check_profiler_gather(*world);
  return mpi_test::finish(*world, "collectives_mpi");
}
