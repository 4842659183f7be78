// The executor's PowerSGD (exec/train/powersgd.hpp) against plain arithmetic: Gram-Schmidt
// by hand, a rank-1 gradient rebuilt exactly, the sum over ranks and the residual's
// bookkeeping (what a rank did not send it keeps), and what is sent whole.
#include "exec/train/powersgd.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "exec/model/tensor.hpp"
#include "exec/runtime/backend.hpp"

namespace twinsim::exec {
namespace {

// A group of `ranks` ranks that all hold this rank's values: an all-reduce multiplies them.
class MirroredCommunicator final : public Communicator {
 public:
  explicit MirroredCommunicator(int ranks) : ranks_(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  void barrier() override {}
  std::vector<std::string> gather_bytes(std::string_view mine, int) override { return {std::string(mine)}; }
  std::unique_ptr<Communicator> split(int, int) override { return std::make_unique<MirroredCommunicator>(ranks_); }
  int all_reduces = 0;

 private:
  void do_all_reduce(Dtype t, void* data, std::size_t n, ReduceOp) override {
    if (t != Dtype::fp32) throw std::logic_error("fp32 only");
    auto* x = static_cast<float*>(data);
    for (std::size_t i = 0; i < n; ++i) x[i] *= static_cast<float>(ranks_);
    ++all_reduces;
  }
  void do_all_gather(Dtype, const void*, void*, std::size_t) override { throw std::logic_error("unused"); }
  void do_reduce_scatter(Dtype, const void*, void*, std::size_t) override { throw std::logic_error("unused"); }
  void do_all_to_all(Dtype, const void*, void*, std::size_t) override { throw std::logic_error("unused"); }
  void do_broadcast(Dtype, void*, std::size_t, int) override {}
  void do_send(Dtype, const void*, std::size_t, int) override { throw std::logic_error("unused"); }
  void do_recv(Dtype, void*, std::size_t, int) override { throw std::logic_error("unused"); }
  void do_send_recv(Dtype, const void*, std::size_t, int, void*, std::size_t, int) override {
    throw std::logic_error("unused");
  }
  int ranks_;
};

// A block with a 16 x 32 weight (worth compressing at rank 1: 512 > 2 x 48), a 32-wide bias
// and a 3 x 3 matrix (9 < 2 x 6: sent whole).
ParamBlock block() {
  // each spec built whole: assigning the short names into a vector's elements tripped
  // g++ 12's -Wrestrict false positive at -O3
  const auto spec = [](std::string name, std::int64_t rows, std::int64_t cols) {
    ParamSpec p;
    p.name = std::move(name), p.rows = rows, p.cols = cols;
    return p;
  };
  const std::vector<ParamSpec> specs{spec("w", 16, 32), spec("b", 1, 32), spec("small", 3, 3)};
  return ParamBlock("test", specs, 1, 0);
}

// On the current backend's memory (the strict-device backend too): the gradients are device
// buffers and the group's collectives go through the backend's device communicator.
class PowerSgd : public ::testing::Test {
 protected:
  // Runs reducer.reduce on a device copy of x, over `group`; x gets the result.
  static void reduce(PowerSgdReducer& reducer, std::vector<float>& x, Communicator& group) {
    Backend& device = current_backend();
    Tensor grads = Tensor::uninitialized(MemCategory::grads, x.size());
    device.copy_to_device(grads.data(), x.data(), grads.bytes());
    const std::unique_ptr<Communicator> staged = device.device_communicator(group);
    reducer.reduce(grads.data(), x.size(), staged ? *staged : group);
    device.copy_to_host(x.data(), grads.data(), grads.bytes());
  }
};

TEST_F(PowerSgd, GramSchmidtByHand) {
  // columns (3, 4) and (1, 2): the first becomes (0.6, 0.8); the second loses 2.2 of it,
  // (-0.32, 0.24), of norm 0.4: (-0.8, 0.6)
  std::vector<float> a{3, 1, 4, 2};
  orthogonalize(a.data(), 2, 2);
  EXPECT_NEAR(a[0], 0.6f, 1e-6);
  EXPECT_NEAR(a[2], 0.8f, 1e-6);
  EXPECT_NEAR(a[1], -0.8f, 1e-6);
  EXPECT_NEAR(a[3], 0.6f, 1e-6);
}

TEST_F(PowerSgd, OnlyMatricesThatGainAreCompressed) {
  const ParamBlock b = block();
  const PowerSgdReducer reducer(b, 1, 7);
  ASSERT_EQ(reducer.matrices().size(), 1u);
  EXPECT_EQ(reducer.matrices()[0].rows, 16u);
  EXPECT_EQ(reducer.matrices()[0].cols, 32u);
  EXPECT_EQ(PowerSgdReducer(b, 8, 7).matrices().size(), 0u);  // 512 < 2 x 48 x 8: all whole
}

// Two ranks holding the same rank-1 gradient u v^T: the sum comes back exact (P Q^T spans
// it), the vectors and the small matrix are summed as they are, and nothing is left in the
// residual; one all-reduce each for the whole values, P and Q.
TEST_F(PowerSgd, ARankOneGradientComesBackSummed) {
  ParamBlock b = block();
  PowerSgdReducer reducer(b, 1, 7);
  std::vector<float> g(b.flat_size());
  for (std::size_t i = 0; i < 16; ++i)
    for (std::size_t j = 0; j < 32; ++j) g[i * 32 + j] = (0.1f * static_cast<float>(i) - 0.7f) * std::cos(static_cast<float>(j));
  for (std::size_t i = 512; i < g.size(); ++i) g[i] = 0.01f * static_cast<float>(i);
  std::vector<float> x = g;
  MirroredCommunicator two(2);
  reduce(reducer, x, two);
  EXPECT_EQ(two.all_reduces, 3);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(x[i], 2 * g[i], 1e-5 * (1 + std::fabs(g[i]))) << i;
  // the next step sends the same again: the residual held nothing
  std::vector<float> y = g;
  reduce(reducer, y, two);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(y[i], 2 * g[i], 1e-5 * (1 + std::fabs(g[i]))) << i;
}

// A full-rank gradient at rank 1 on one rank: what is sent plus the residual is the
// gradient plus the last residual (error feedback loses nothing), and over steps the
// residual is sent: the running sum of what was sent tracks K times the gradient far closer
// than K times one step's rank-1 approximation does.
TEST_F(PowerSgd, WhatIsNotSentIsKeptAndSentLater) {
  ParamBlock b = block();
  PowerSgdReducer reducer(b, 1, 7);
  std::vector<float> g(b.flat_size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f * static_cast<float>(i % 5);
  MirroredCommunicator one(1);
  std::vector<double> sent(g.size(), 0.0);
  std::vector<float> first;
  const int steps = 64;
  for (int k = 0; k < steps; ++k) {
    std::vector<float> x = g;
    reduce(reducer, x, one);
    if (k == 0) first = x;
    for (std::size_t i = 0; i < g.size(); ++i) sent[i] += x[i];
  }
  double worst = 0, without = 0;
  for (std::size_t i = 0; i < 512; ++i) {
    worst = std::max(worst, std::fabs(sent[i] - steps * static_cast<double>(g[i])));
    without = std::max(without, std::fabs(steps * static_cast<double>(first[i]) - steps * static_cast<double>(g[i])));
  }
  EXPECT_GT(without, 10.0);         // one rank-1 approximation misses much of the matrix...
  EXPECT_LT(worst, without / 5.0);  // ... which error feedback sends later (measured: 6.5 against 89.6)
  for (std::size_t i = 512; i < g.size(); ++i) EXPECT_NEAR(sent[i], steps * static_cast<double>(g[i]), 1e-3) << i;
}

}  // namespace
}  // namespace twinsim::exec
