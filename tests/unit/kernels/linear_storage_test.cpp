// The linear layer in bf16 and fp16 storage against the exact (double) layer on the same
// stored inputs: every output within the fp32 accumulation bound of its sum plus half a gap
// of the stored type (kernel_test_util.hpp). Not against the float layer: that one sums
// in another order (the AVX2 or portable GEMM on whole matrices, against the 16-bit path's
// 256-tiles), and where an output is small beside its terms two fp32 orders differ by more
// than a 16-bit ulp (4 fp16 ulps seen on one machine, token 7, output 84).
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/storage.hpp"
#include "kernels/cpu/linear.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::kernels::testing {
namespace {

template <class T>
class LinearStorage : public ::testing::Test {};
using SixteenBit = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(LinearStorage, SixteenBit);

// 70 tokens, in 300, out 270: the GEMMs span more than one 256-tile in every dimension.
constexpr int kTokens = 70, kIn = 300, kOut = 270;

// y [tokens, out] = x w^T (+ bias on every row): the reference of linear_forward.
Fp32Reference forward_reference(const std::vector<double>& x, const std::vector<double>& w,
                                const std::vector<double>& bias) {
  std::vector<double> addend;
  if (!bias.empty())
    for (int t = 0; t < kTokens; ++t) addend.insert(addend.end(), bias.begin(), bias.end());
  return product_reference(x, transposed(w, kOut, kIn), kTokens, kOut, kIn, addend);
}

// Signed inputs (sums that cancel) and inputs of one sign (the allowance about half an ulp).
const char* sign_name(bool one_sign) { return one_sign ? "one-sign" : "signed"; }

// A forward pass's inputs in T: x [tokens, in], w [out, in], bias [out], drawn from seeds
// seed, seed + 1, seed + 2 in [lo, 1].
template <class T>
struct ForwardInputs {
  std::vector<T> x, w, bias;
  ForwardInputs(unsigned seed, float lo)
      : x(random_storage<T>(kTokens * kIn, seed, lo)),
        w(random_storage<T>(kOut * kIn, seed + 1, lo)),
        bias(random_storage<T>(kOut, seed + 2, lo)) {}
};

TYPED_TEST(LinearStorage, ForwardWithAndWithoutBiasWithinTheBound) {
  using T = TypeParam;
  for (bool one_sign : {false, true}) {
    const auto [x, w, bias] = ForwardInputs<T>(1, one_sign ? 0.0f : -1.0f);
    const auto x64 = widen<double>(x), w64 = widen<double>(w), b64 = widen<double>(bias);
    std::vector<T> y(kTokens * kOut);
    cpu::linear_forward(x.data(), w.data(), bias.data(), y.data(), kTokens, kIn, kOut);
    expect_within_bound(y, forward_reference(x64, w64, b64), std::string("y with bias, ") + sign_name(one_sign));
    cpu::linear_forward(x.data(), w.data(), nullptr, y.data(), kTokens, kIn, kOut);
    expect_within_bound(y, forward_reference(x64, w64, {}), std::string("y without bias, ") + sign_name(one_sign));
  }
}

TYPED_TEST(LinearStorage, BackwardOpsWithinTheBound) {
  using T = TypeParam;
  for (bool one_sign : {false, true}) {
    const float lo = one_sign ? 0.0f : -1.0f;
    const std::string sign = sign_name(one_sign);
    const auto x = random_storage<T>(kTokens * kIn, 4, lo), w = random_storage<T>(kOut * kIn, 5, lo);
    const auto dy = random_storage<T>(kTokens * kOut, 6, lo);
    const auto x64 = widen<double>(x), w64 = widen<double>(w), dy64 = widen<double>(dy);

    // dx [tokens, in] = dy w: sums over out
    std::vector<T> dx(kTokens * kIn);
    cpu::linear_backward_input(dy.data(), w.data(), dx.data(), kTokens, kIn, kOut);
    expect_within_bound(dx, product_reference(dy64, w64, kTokens, kIn, kOut), "dx, " + sign);

    // dW [out, in] = dy^T x: sums over tokens; then a second micro-batch accumulating onto
    // the 16-bit grads (the reference adds the stored grads exactly)
    std::vector<T> dw(kOut * kIn), db(kOut);
    std::vector<float> dbf(kOut);
    const auto dyt = transposed(dy64, kTokens, kOut);
    for (bool accumulate : {false, true}) {
      const auto old_dw = accumulate ? widen<double>(dw) : std::vector<double>{};
      const auto dyf = widen<float>(dy);
      if (accumulate) dbf = widen<float>(db);
      cpu::linear_backward_weight(dy.data(), x.data(), dw.data(), kTokens, kIn, kOut, accumulate);
      expect_within_bound(dw, product_reference(dyt, x64, kOut, kIn, kTokens, old_dw),
                          (accumulate ? "dW accumulated, " : "dW, ") + sign);
      // db is no GEMM: the same fp32 column sums in the same order as the float kernel, so
      // exactly the float grad rounded once
      cpu::linear_backward_bias(dy.data(), db.data(), kTokens, kOut, accumulate);
      cpu::linear_backward_bias(dyf.data(), dbf.data(), kTokens, kOut, accumulate);
      for (int o = 0; o < kOut; ++o)
        EXPECT_EQ(db[o].bits, from_float<T>(dbf[o]).bits) << (accumulate ? "db accumulated " : "db ") << o;
    }
  }
}

// The check can fail: a layer that keeps its sums in 16 bits, and one that adds the bias
// in a pass of its own (x w^T stored in T, then + bias rounded again, as an unfused bias
// kernel would), are both caught where the real layer passes.
TYPED_TEST(LinearStorage, TheBoundCatchesSumsIn16BitsAndASecondRounding) {
  using T = TypeParam;
  for (bool one_sign : {false, true}) {
    const auto [x, w, bias] = ForwardInputs<T>(7, one_sign ? 0.0f : -1.0f);
    const auto xf = widen<float>(x), wf = widen<float>(w), bf = widen<float>(bias);
    const Fp32Reference ref = forward_reference(widen<double>(x), widen<double>(w), widen<double>(bias));

    std::vector<T> sum16(kTokens * kOut), bias_apart(kTokens * kOut);
    for (int t = 0; t < kTokens; ++t)
      for (int o = 0; o < kOut; ++o) {
        T acc = from_float<T>(0.0f);
        float acc32 = 0.0f;
        for (int i = 0; i < kIn; ++i) {
          acc = from_float<T>(to_float(acc) + xf[t * kIn + i] * wf[o * kIn + i]);
          acc32 += xf[t * kIn + i] * wf[o * kIn + i];
        }
        sum16[t * kOut + o] = from_float<T>(to_float(acc) + bf[o]);
        bias_apart[t * kOut + o] = from_float<T>(to_float(from_float<T>(acc32)) + bf[o]);
      }
    std::vector<T> y(kTokens * kOut);
    cpu::linear_forward(x.data(), w.data(), bias.data(), y.data(), kTokens, kIn, kOut);
    const BoundCheck right = check_against_bound(y, ref), in16 = check_against_bound(sum16, ref),
                     twice = check_against_bound(bias_apart, ref);
    EXPECT_TRUE(right.ok()) << sign_name(one_sign) << ", the layer: " << describe(right);
    EXPECT_FALSE(in16.ok()) << sign_name(one_sign) << ", sums in 16 bits: " << describe(in16);
    // signed sums cancel, and a bias rounded apart hides in their allowance: only one-sign
    // inputs can tell it
    if (one_sign) {
      EXPECT_FALSE(twice.ok()) << "bias rounded apart: " << describe(twice);
    }
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
