// Every collective of MpiCommunicator, checked on each rank against the value computed
// there by a plain loop over what each rank contributed. Runs on any number of ranks,
// including 1 (started without mpirun: Open MPI's singleton mode). float32 first, then
// bf16 and fp16: moved bit for bit, summed with one rounding per reduction step.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
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
    c.all_reduce<float>(nullptr, std::size_t{1} << 31);
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

// --- 16-bit collectives ----------------------------------------------------------------

using twinsim::kernels::bf16;
using twinsim::kernels::fp16;
using twinsim::kernels::from_float;
using twinsim::kernels::to_float;

template <class T>
const char* type_name() {
  return std::is_same_v<T, bf16> ? "bf16 " : "fp16 ";
}

std::uint32_t mix(std::uint32_t x) {  // lowbias32 (Chris Wellons' hash prospector)
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

std::uint32_t hash(int r, std::size_t i, std::uint32_t salt) {
  return mix(static_cast<std::uint32_t>(i) * 0x9e3779b9u ^ mix(static_cast<std::uint32_t>(r) + salt));
}

// NaNs (quiet, signalling, negative, with payloads), infinities, subnormals, -0, the largest.
template <class T>
std::vector<std::uint16_t> special_bits() {
  if (std::is_same_v<T, bf16>) return {0x7fc0, 0x7f81, 0xffc1, 0x7f80, 0xff80, 0x0001, 0x807f, 0x8000, 0x7f7f};
  return {0x7e00, 0x7c01, 0xfe01, 0x7c00, 0xfc00, 0x0001, 0x83ff, 0x8000, 0x7bff};
}

// What rank r moves at index i: any 16-bit pattern, every third a special one.
template <class T>
T pattern(int r, std::size_t i) {
  static const std::vector<std::uint16_t> specials = special_bits<T>();
  const std::uint32_t h = hash(r, i, 1);
  if (i % 3 == 0) return T{specials[h % specials.size()]};
  return T{static_cast<std::uint16_t>(h >> 8)};
}

// What rank r adds at index i: finite, both signs, magnitudes from below the smallest
// normal (subnormals) to 2^10, so no sum over 4 ranks overflows fp16.
template <class T>
T addend(int r, std::size_t i) {
  const int lowest = std::is_same_v<T, bf16> ? -134 : -26;
  const std::uint32_t h = hash(r, i, 2);
  const int e = lowest + static_cast<int>(h % static_cast<std::uint32_t>(11 - lowest));
  const float mantissa = static_cast<float>((h >> 8) & 0xffffu) / 65536.0f;  // [0, 1)
  const float x = std::ldexp(1.0f + mantissa, e);
  return from_float<T>((h & 0x80u) ? -x : x);
}

// One unit in the last place of T for magnitudes up to m (subnormal spacing at the bottom).
template <class T>
double ulp_near(double m) {
  const int mantissa_bits = std::is_same_v<T, bf16> ? 7 : 10;
  const int min_exp = std::is_same_v<T, bf16> ? -126 : -14;
  int e = 0;
  std::frexp(m, &e);  // m = f * 2^e with f in [0.5, 1): m's binade is 2^(e-1)
  return std::ldexp(1.0, std::max(e - 1, min_exp) - mantissa_bits);
}

// "0x3f80 (1)": the bits and the value
template <class T>
std::string show(T x) {
  char s[48];
  std::snprintf(s, sizeof s, "0x%04x (%g)", static_cast<unsigned>(x.bits), static_cast<double>(to_float(x)));
  return s;
}

template <class T>
std::string at_bits(std::size_t i, T got, T want) {
  std::string s = type_name<T>();
  s.append("[").append(std::to_string(i)).append("] got ").append(show(got));
  return s.append(" want ").append(show(want));
}

// A sum over the ranks of addend(r, j): with two ranks exactly one rounding of the fp32
// sum; with more, within one rounding per step (size - 1 of them), each at most half an
// ulp of a partial sum, which is no larger than the sum of magnitudes.
template <class T>
void check_sum(const Communicator& c, const std::string& what, std::size_t i, std::size_t j, T got) {
  double exact = 0, magnitude = 0;
  for (int r = 0; r < c.size(); ++r) {
    exact += to_float(addend<T>(r, j));
    magnitude += std::fabs(to_float(addend<T>(r, j)));
  }
  if (c.size() <= 2) {
    float once = to_float(addend<T>(0, j));
    if (c.size() == 2) once += to_float(addend<T>(1, j));
    const T want = from_float<T>(once);
    MPI_CHECK(got.bits == want.bits, what + at_bits(i, got, want));
    return;
  }
  const double err = std::fabs(to_float(got) - exact), bound = (c.size() - 1) * ulp_near<T>(magnitude);
  char excess[64];
  std::snprintf(excess, sizeof excess, " error %g > %g", err, bound);
  MPI_CHECK(err <= bound, what + at_bits(i, got, from_float<T>(static_cast<float>(exact))) + excess);
}

// Every rank holds the same bits as rank 0.
template <class T>
void check_same_everywhere(Communicator& c, const std::string& what, const std::vector<T>& mine) {
  const std::size_t n = mine.size(), p = static_cast<std::size_t>(c.size());
  std::vector<T> all(n * p);
  c.all_gather(mine.data(), all.data(), n);
  for (std::size_t r = 1; r < p; ++r)
    for (std::size_t i = 0; i < n; ++i)
      MPI_CHECK(all[r * n + i].bits == all[i].bits,
                what + "differs on rank " + std::to_string(r) + " " + at_bits(i, all[r * n + i], all[i]));
}

template <class T>
void check_all_reduce_16(Communicator& c) {
  const std::size_t p = static_cast<std::size_t>(c.size());
  const std::string sum_what = "all_reduce sum ";
  for (const std::size_t n : {1, 7, 1001}) {
    std::vector<T> sum(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = addend<T>(c.rank(), i);
    c.all_reduce(sum.data(), n);
    for (std::size_t i = 0; i < n; ++i) check_sum(c, sum_what, i, i, sum[i]);
    check_same_everywhere(c, sum_what, sum);
  }

  // an infinity or a NaN on one rank among finite addends on the others survives the sum
  const std::vector<std::uint16_t> specials = special_bits<T>();
  const std::size_t n = 9;
  std::vector<T> spec(n);
  for (std::size_t i = 0; i < n; ++i)
    spec[i] = i % p == static_cast<std::size_t>(c.rank()) ? T{specials[i % 5]} : addend<T>(c.rank(), i);
  c.all_reduce(spec.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const float want = to_float(T{specials[i % 5]});  // the first five: three NaNs, +inf, -inf
    const bool ok = std::isnan(want) ? std::isnan(to_float(spec[i])) : to_float(spec[i]) == want;
    MPI_CHECK(ok, std::string("all_reduce sum of a special ") + at_bits(i, spec[i], T{specials[i % 5]}));
  }

  // max: exact, a NaN wins, +0 beats -0
  for (const std::size_t m : {1, 7, 1001}) {
    std::vector<T> mx(m);
    auto contribution = [&](int r, std::size_t i) {
      if (i % 7 == 3) return T{static_cast<std::uint16_t>(r % 2 == 0 ? 0x0000 : 0x8000)};
      if (i % 7 == 5 && i % p == static_cast<std::size_t>(r)) return T{specials[0]};  // a quiet NaN
      return addend<T>(r, i);
    };
    for (std::size_t i = 0; i < m; ++i) mx[i] = contribution(c.rank(), i);
    c.all_reduce(mx.data(), m, ReduceOp::max);
    for (std::size_t i = 0; i < m; ++i) {
      T want = contribution(0, i);
      for (int r = 1; r < c.size(); ++r) {
        const T x = contribution(r, i);
        const bool plus_zero_over_minus = to_float(x) == to_float(want) && (x.bits & 0x8000u) == 0;
        if (std::isnan(to_float(x)) || to_float(x) > to_float(want) || plus_zero_over_minus) want = x;
      }
      const bool ok = std::isnan(to_float(want)) ? std::isnan(to_float(mx[i])) : mx[i].bits == want.bits;
      MPI_CHECK(ok, std::string("all_reduce max ") + at_bits(i, mx[i], want));
    }
    check_same_everywhere(c, "all_reduce max ", mx);
  }
}

template <class T>
void check_reduce_scatter_16(Communicator& c) {
  const std::size_t p = static_cast<std::size_t>(c.size());
  // growing and shrinking counts, after the float calls: the ring's byte scratch is shared
  for (const std::size_t n : {1, 1001, 7}) {
    std::vector<T> send(n * p), part(n, T{0xffff});
    for (std::size_t j = 0; j < n * p; ++j) send[j] = addend<T>(c.rank(), j);
    c.reduce_scatter(send.data(), part.data(), n);
    const std::size_t first = static_cast<std::size_t>(c.rank()) * n;
    for (std::size_t i = 0; i < n; ++i) check_sum(c, std::string("reduce_scatter "), i, first + i, part[i]);
    // in place: the same ring, so the same bits
    T* own = send.data() + first;
    c.reduce_scatter(send.data(), own, n);
    for (std::size_t i = 0; i < n; ++i)
      MPI_CHECK(own[i].bits == part[i].bits, std::string("reduce_scatter in place ") + at_bits(i, own[i], part[i]));
  }
}

template <class T>
void check_moves_16(Communicator& c) {
  const std::size_t p = static_cast<std::size_t>(c.size());
  const int me = c.rank();
  for (const std::size_t n : {1, 7, 1001}) {
    const std::string count = std::string("n=").append(std::to_string(n)).append(" ");
    // all_gather, out of place and in place
    std::vector<T> mine(n), all(n * p, T{0xffff});
    for (std::size_t i = 0; i < n; ++i) mine[i] = pattern<T>(me, i);
    auto check_gathered = [&](const std::string& what) {
      for (std::size_t r = 0; r < p; ++r)
        for (std::size_t i = 0; i < n; ++i) {
          const T want = pattern<T>(static_cast<int>(r), i);
          MPI_CHECK(all[r * n + i].bits == want.bits, what + count + at_bits(r * n + i, all[r * n + i], want));
        }
    };
    c.all_gather(mine.data(), all.data(), n);
    check_gathered("all_gather ");
    std::fill(all.begin(), all.end(), T{0xffff});
    T* own = all.data() + static_cast<std::size_t>(me) * n;
    std::copy(mine.begin(), mine.end(), own);
    c.all_gather(own, all.data(), n);
    check_gathered("all_gather in place ");

    // all_to_all: part d of what rank s sends is pattern(s, d * n + i)
    std::vector<T> send(n * p), recv(n * p, T{0xffff});
    for (std::size_t j = 0; j < n * p; ++j) send[j] = pattern<T>(me, j);
    c.all_to_all(send.data(), recv.data(), n);
    for (std::size_t src = 0; src < p; ++src)
      for (std::size_t i = 0; i < n; ++i) {
        const T want = pattern<T>(static_cast<int>(src), static_cast<std::size_t>(me) * n + i);
        MPI_CHECK(recv[src * n + i].bits == want.bits, "all_to_all " + count + at_bits(src * n + i, recv[src * n + i], want));
      }

    // broadcast from the last rank
    const int root = c.size() - 1;
    std::vector<T> data(n, T{0xffff});
    if (me == root) data = mine;
    c.broadcast(data.data(), n, root);
    for (std::size_t i = 0; i < n; ++i)
      MPI_CHECK(data[i].bits == pattern<T>(root, i).bits, "broadcast " + count + at_bits(i, data[i], pattern<T>(root, i)));

    // send_recv along a pipeline; the ends skip a half
    const int next = me + 1 < c.size() ? me + 1 : -1, prev = me > 0 ? me - 1 : -1;
    std::vector<T> in(n, T{0xffff});
    c.send_recv(mine.data(), n, next, in.data(), n, prev);
    for (std::size_t i = 0; prev >= 0 && i < n; ++i)
      MPI_CHECK(in[i].bits == pattern<T>(prev, i).bits, "send_recv " + count + at_bits(i, in[i], pattern<T>(prev, i)));

    // blocking send/recv between pairs (0 -> 1, 2 -> 3, ...)
    std::fill(in.begin(), in.end(), T{0xffff});
    if (me % 2 == 0 && me + 1 < c.size()) c.send(mine.data(), n, me + 1);
    if (me % 2 == 1) {
      c.recv(in.data(), n, me - 1);
      for (std::size_t i = 0; i < n; ++i)
        MPI_CHECK(in[i].bits == pattern<T>(me - 1, i).bits, "send/recv " + count + at_bits(i, in[i], pattern<T>(me - 1, i)));
    }
  }
}

// send_recv's one-sided forms: a nullptr half (the type from the other), or both
// (T named); even ranks send to the next, odd ranks receive from the previous.
template <class T>
void check_one_sided_send_recv(Communicator& c) {
  const std::size_t n = 5;
  const int me = c.rank();
  std::vector<T> buf(n, T{0xffff});
  if (me % 2 == 1) {
    c.send_recv(nullptr, 0, -1, buf.data(), n, me - 1);
    for (std::size_t i = 0; i < n; ++i)
      MPI_CHECK(buf[i].bits == pattern<T>(me - 1, i).bits, "send_recv recv only " + at_bits(i, buf[i], pattern<T>(me - 1, i)));
  } else if (me + 1 < c.size()) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = pattern<T>(me, i);
    c.send_recv(buf.data(), n, me + 1, nullptr, 0, -1);
  } else {
    c.send_recv<T>(nullptr, 0, -1, nullptr, 0, -1);
  }
}

template <class T>
void check_16_bit(Communicator& c) {
  check_all_reduce_16<T>(c);
  check_reduce_scatter_16<T>(c);
  check_moves_16<T>(c);
  check_one_sided_send_recv<T>(c);
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
  check_16_bit<bf16>(*world);
  check_16_bit<fp16>(*world);
  check_reduce_scatter(*world);  // float again, after the 16-bit calls resized the scratch
  return mpi_test::finish(*world, "collectives_mpi");
}
