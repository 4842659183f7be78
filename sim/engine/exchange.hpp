#pragma once
// What the processes of a parallel simulation tell each other (simulate(graph, exchange,
// ...) in simulator.hpp): collective calls every process makes in the same order, as MPI
// collectives are. app/ implements it over MPI; tests over threads.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace twinsim::engine {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int process() const = 0;    // this process, 0 .. processes() - 1
  virtual int processes() const = 0;
  virtual double min_all(double local) = 0;  // the smallest of every process's value
  virtual bool any_all(bool local) = 0;      // whether some process's value is true
  // every process's items, concatenated in process order
  virtual std::vector<std::int32_t> gather_all(std::span<const std::int32_t> local) = 0;
  virtual std::vector<double> gather_all(std::span<const double> local) = 0;
  virtual std::vector<std::byte> gather_all(std::span<const std::byte> local) = 0;
};

// Every process's trivially copyable items, concatenated in process order (as bytes).
template <class T>
std::vector<T> gather_items(Exchange& exchange, const std::vector<T>& mine) {
  static_assert(std::is_trivially_copyable_v<T>, "sent as bytes");
  const std::vector<std::byte> all = exchange.gather_all(std::as_bytes(std::span<const T>(mine)));
  std::vector<T> out(all.size() / sizeof(T));
  std::memcpy(out.data(), all.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace twinsim::engine
