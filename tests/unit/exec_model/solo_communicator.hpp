#pragma once
// A world of one rank for single-process tests of code that takes a Communicator:
// collectives over one rank copy or do nothing; barriers are counted.
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
  void barrier() override { ++barriers; }
  std::vector<std::string> gather_bytes(std::string_view mine, int) override { return {std::string(mine)}; }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<SoloCommunicator>(); }
  int barriers = 0;

 private:
  // memmove: in place, send and recv are the same part
  static void copy(Dtype t, const void* s, void* r, std::size_t n) { std::memmove(r, s, n * storage_bytes(t)); }
  void do_all_reduce(Dtype, void*, std::size_t, ReduceOp) override {}
  void do_all_gather(Dtype t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_reduce_scatter(Dtype t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_all_to_all(Dtype t, const void* s, void* r, std::size_t n) override { copy(t, s, r, n); }
  void do_broadcast(Dtype, void*, std::size_t, int) override {}
  void do_send(Dtype, const void*, std::size_t, int) override { throw std::logic_error("no peer"); }
  void do_recv(Dtype, void*, std::size_t, int) override { throw std::logic_error("no peer"); }
  // peer -1 skips a half; there is no other peer
  void do_send_recv(Dtype, const void*, std::size_t, int send_peer, void*, std::size_t, int recv_peer) override {
    if (send_peer >= 0 || recv_peer >= 0) throw std::logic_error("no peer");
  }
};

}  // namespace twinsim::exec::test
