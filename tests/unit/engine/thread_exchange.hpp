#pragma once
// The engine's Exchange (sim/engine/exchange.hpp) with threads as the processes, for tests
// of what runs split over MPI processes (the step simulation, the search's sharded pass).
#include <algorithm>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "sim/engine/exchange.hpp"

namespace twinsim {

// n threads exchanging through shared slots: each call writes its slot, waits for all,
// reads every slot, and waits again before the slots are reused.
class Table {
 public:
  explicit Table(int n) : n_(n), sync_(n), ints_(n), doubles_(n), bytes_(n) {}
  int n_;
  std::barrier<> sync_;
  std::vector<std::vector<std::int32_t>> ints_;
  std::vector<std::vector<double>> doubles_;
  std::vector<std::vector<std::byte>> bytes_;
};

class ThreadExchange : public engine::Exchange {
 public:
  ThreadExchange(Table& table, int me) : t_(table), me_(me) {}
  int process() const override { return me_; }
  int processes() const override { return t_.n_; }
  double min_all(double local) override {
    double m = std::numeric_limits<double>::infinity();
    for (double v : gather_all(std::span<const double>(&local, 1))) m = std::min(m, v);
    return m;
  }
  bool any_all(bool local) override {
    const double v = local ? 1.0 : 0.0;
    for (double x : gather_all(std::span<const double>(&v, 1)))
      if (x > 0) return true;
    return false;
  }
  std::vector<std::int32_t> gather_all(std::span<const std::int32_t> local) override {
    return gather(t_.ints_, local);
  }
  std::vector<double> gather_all(std::span<const double> local) override { return gather(t_.doubles_, local); }
  std::vector<std::byte> gather_all(std::span<const std::byte> local) override { return gather(t_.bytes_, local); }

 private:
  template <class T>
  std::vector<T> gather(std::vector<std::vector<T>>& slots, std::span<const T> local) {
    slots[me_].assign(local.begin(), local.end());
    t_.sync_.arrive_and_wait();
    std::vector<T> all;
    for (const auto& s : slots) all.insert(all.end(), s.begin(), s.end());
    t_.sync_.arrive_and_wait();
    return all;
  }
  Table& t_;
  int me_;
};

}  // namespace twinsim
