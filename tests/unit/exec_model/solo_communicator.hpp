#pragma once
// A world of one rank for single-process tests of code that takes a Communicator:
// collectives over one rank copy or do nothing.
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "exec/runtime/communicator.hpp"

namespace twinsim::exec::test {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce(float*, std::size_t, ReduceOp) override {}
  void all_gather(const float* s, float* r, std::size_t n) override {
    if (s != r) std::copy(s, s + n, r);
  }
  void reduce_scatter(const float* s, float* r, std::size_t n) override { std::copy(s, s + n, r); }
  void all_to_all(const float* s, float* r, std::size_t n) override { std::copy(s, s + n, r); }
  void broadcast(float*, std::size_t, int) override {}
  void send(const float*, std::size_t, int) override { throw std::logic_error("no peer"); }
  void recv(float*, std::size_t, int) override { throw std::logic_error("no peer"); }
  void barrier() override {}
  void send_recv(const float*, std::size_t, int, float*, std::size_t, int) override {
    throw std::logic_error("no peer");
  }
  std::vector<std::string> gather_bytes(std::string_view mine, int) override { return {std::string(mine)}; }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SoloCommunicator>(); }
};

}  // namespace twinsim::exec::test
