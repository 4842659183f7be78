#pragma once
// A world of one rank for single-process tests of code that takes a Communicator:
// collectives over one rank copy or do nothing.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "exec/runtime/communicator.hpp"

namespace twinsim::exec::test {

class SoloCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  std::vector<std::string> gather_bytes(std::string_view mine, int) override { return {std::string(mine)}; }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SoloCommunicator>(); }

 private:
  // memmove: in place, send and recv are the same part
  static void copy(ElemType t, const void* s, void* r, std::size_t n) { std::memmove(r, s, n * elem_bytes(t)); }
  void do_all_reduce(ElemType, void*, std::size_t, ReduceOp) override {}
  void do_all_gather(ElemType t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_reduce_scatter(ElemType t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_all_to_all(ElemType t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_broadcast(ElemType, void*, std::size_t, int) override {}
  void do_send(ElemType, const void*, std::size_t, int) override { throw std::logic_error("no peer"); }
  void do_recv(ElemType, void*, std::size_t, int) override { throw std::logic_error("no peer"); }
  void do_send_recv(ElemType, const void*, std::size_t, int, void*, std::size_t, int) override {
    throw std::logic_error("no peer");
  }
};

}  // namespace twinsim::exec::test
