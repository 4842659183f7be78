// The linear layer in bf16 and fp16 storage against the float layer run on the same
// (rounded) values: every output must be the float result rounded once to T, give or take
// the one ulp by which fp32 sums taken in another order can straddle a rounding boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/storage.hpp"
#include "kernels/cpu/linear.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

// A 16-bit value's place on the number line as an integer; neighbours differ by 1.
template <class T>
int ordered(T v) {
  const int magnitude = v.bits & 0x7fff;
  return (v.bits & 0x8000) ? -magnitude : magnitude;
}

// got == round(reference) within 1 ulp everywhere, and exactly for all but 1% + 1.
template <class T>
void expect_rounded_once(const std::vector<T>& got, const std::vector<float>& reference,
                         const char* what) {
  ASSERT_EQ(got.size(), reference.size()) << what;
  int max_ulps = 0;
  long inexact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int ulps = std::abs(ordered(got[i]) - ordered(from_float<T>(reference[i])));
    max_ulps = std::max(max_ulps, ulps);
    inexact += ulps != 0;
  }
  EXPECT_LE(max_ulps, 1) << what;
  EXPECT_LE(inexact, static_cast<long>(got.size()) / 100 + 1) << what << ": " << inexact << " of "
                                                             << got.size() << " off by one ulp";
}

template <class T>
class LinearStorage : public ::testing::Test {};
using SixteenBit = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(LinearStorage, SixteenBit);

// 70 tokens, in 300, out 270: the GEMMs span more than one 256-tile in every dimension.
constexpr int kTokens = 70, kIn = 300, kOut = 270;

TYPED_TEST(LinearStorage, ForwardWithAndWithoutBiasIsTheFloatLayerRoundedOnce) {
  using T = TypeParam;
  const auto x = random_storage<T>(kTokens * kIn, 1), w = random_storage<T>(kOut * kIn, 2);
  const auto bias = random_storage<T>(kOut, 3);
  const auto xf = widen<float>(x), wf = widen<float>(w), bf = widen<float>(bias);
  std::vector<T> y(kTokens * kOut);
  std::vector<float> yf(kTokens * kOut);

  cpu::linear_forward(x.data(), w.data(), bias.data(), y.data(), kTokens, kIn, kOut);
  cpu::linear_forward(xf.data(), wf.data(), bf.data(), yf.data(), kTokens, kIn, kOut);
  expect_rounded_once(y, yf, "y with bias");

  cpu::linear_forward(x.data(), w.data(), nullptr, y.data(), kTokens, kIn, kOut);
  cpu::linear_forward(xf.data(), wf.data(), nullptr, yf.data(), kTokens, kIn, kOut);
  expect_rounded_once(y, yf, "y without bias");
}

TYPED_TEST(LinearStorage, BackwardOpsAreTheFloatLayerRoundedOnce) {
  using T = TypeParam;
  const auto x = random_storage<T>(kTokens * kIn, 4), w = random_storage<T>(kOut * kIn, 5);
  const auto dy = random_storage<T>(kTokens * kOut, 6);
  const auto xf = widen<float>(x), wf = widen<float>(w), dyf = widen<float>(dy);

  std::vector<T> dx(kTokens * kIn);
  std::vector<float> dxf(kTokens * kIn);
  cpu::linear_backward_input(dy.data(), w.data(), dx.data(), kTokens, kIn, kOut);
  cpu::linear_backward_input(dyf.data(), wf.data(), dxf.data(), kTokens, kIn, kOut);
  expect_rounded_once(dx, dxf, "dx");

  // Overwrite, then a second micro-batch accumulating onto the 16-bit grads: the float
  // reference starts from the same (rounded) grads, so each call rounds once.
  std::vector<T> dw(kOut * kIn), db(kOut);
  std::vector<float> dwf(kOut * kIn), dbf(kOut);
  for (bool accumulate : {false, true}) {
    if (accumulate) dwf = widen<float>(dw), dbf = widen<float>(db);
    cpu::linear_backward_weight(dy.data(), x.data(), dw.data(), kTokens, kIn, kOut, accumulate);
    cpu::linear_backward_weight(dyf.data(), xf.data(), dwf.data(), kTokens, kIn, kOut, accumulate);
    expect_rounded_once(dw, dwf, accumulate ? "dW accumulated" : "dW");
    cpu::linear_backward_bias(dy.data(), db.data(), kTokens, kOut, accumulate);
    cpu::linear_backward_bias(dyf.data(), dbf.data(), kTokens, kOut, accumulate);
    // same fp32 sums in the same order: exactly the float grad rounded once
    for (int o = 0; o < kOut; ++o)
      EXPECT_EQ(db[o].bits, from_float<T>(dbf[o]).bits) << (accumulate ? "db accumulated " : "db ") << o;
  }
}

TYPED_TEST(LinearStorage, BiasGradSumsInFloatNotIn16Bits) {
  // 4096 tokens of dy = 1 + eps (eps: T's ulp at 1): a 16-bit running sum loses the eps
  // terms once its ulp outgrows them; the fp32 sum is 4096 (1 + eps), exact in T.
  using T = TypeParam;
  const float eps = std::is_same_v<T, bf16> ? 1.0f / 128 : 1.0f / 1024;
  const int tokens = 4096, out = 3;
  std::vector<T> dy(tokens * out, from_float<T>(1.0f + eps)), db(out);
  cpu::linear_backward_bias(dy.data(), db.data(), tokens, out, false);
  for (int o = 0; o < out; ++o) EXPECT_EQ(to_float(db[o]), 4096.0f * (1.0f + eps)) << o;
}

}  // namespace
}  // namespace twinsim::kernels::testing
