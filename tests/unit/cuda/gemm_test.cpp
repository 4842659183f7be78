// cuBLAS GEMM and linear layer against the CPU kernels (kernels/cpu/gemm, linear) on the
// same random inputs: fp32 in all four transpose combinations, tf32, bf16 and fp16.
#ifdef TWINSIM_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/linear.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::cuda_testing {
namespace {

namespace cpu = kernels::cpu;
namespace gpu = kernels::cuda;

// Odd sizes, so no dimension is a multiple of a cuBLAS tile.
constexpr int kM = 37, kN = 53, kK = 29;

class CudaGemm : public GpuTest, public ::testing::WithParamInterface<std::pair<bool, bool>> {};

TEST_P(CudaGemm, Fp32MatchesCpuWithAlphaAndBeta) {
  auto [ta, tb] = GetParam();
  auto a = random_vector(kM * kK, 1), b = random_vector(kK * kN, 2), c = random_vector(kM * kN, 3);
  DeviceFloats da(a), db(b), dc(c);
  gpu::gemm_forward(da.get(), db.get(), dc.get(), kM, kN, kK, ta, tb, 0.75f, 0.5f);
  cpu::gemm_forward(a.data(), b.data(), c.data(), kM, kN, kK, ta, tb, 0.75f, 0.5f);
  expect_all_near(dc.to_host(), c, kFp32Tol, kFp32Tol, "C");
}

TEST_P(CudaGemm, BackwardMatchesCpuAndAccumulates) {
  auto [ta, tb] = GetParam();
  auto a = random_vector(kM * kK, 4), b = random_vector(kK * kN, 5), dc = random_vector(kM * kN, 6);
  auto ga = random_vector(kM * kK, 7), gb = random_vector(kK * kN, 8);  // grads already holding a value
  DeviceFloats d_a(a), d_b(b), d_dc(dc), d_ga(ga), d_gb(gb);
  gpu::gemm_backward(d_a.get(), d_b.get(), d_dc.get(), d_ga.get(), d_gb.get(), kM, kN, kK, ta, tb, true);
  cpu::gemm_backward(a.data(), b.data(), dc.data(), ga.data(), gb.data(), kM, kN, kK, ta, tb, true);
  expect_all_near(d_ga.to_host(), ga, kFp32Tol, kFp32Tol, "dA");
  expect_all_near(d_gb.to_host(), gb, kFp32Tol, kFp32Tol, "dB");
}

INSTANTIATE_TEST_SUITE_P(Transposes, CudaGemm,
                         ::testing::Values(std::pair{false, false}, std::pair{false, true},
                                           std::pair{true, false}, std::pair{true, true}));

// 16-bit storage: the reference multiplies the already-rounded inputs in fp32 on the CPU,
// so only the fp32-accumulated sum and the final rounding of C differ.
template <typename Half, typename ToHalf, typename ToFloat>
void check_half_gemm(gpu::GemmType type, ToHalf to_half, ToFloat to_float, double tol) {
  auto a = random_vector(kM * kK, 9), b = random_vector(kK * kN, 10);
  std::vector<Half> ha(a.size()), hb(b.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_float(ha[i] = to_half(a[i]));
  for (size_t i = 0; i < b.size(); ++i) b[i] = to_float(hb[i] = to_half(b[i]));
  DeviceVector<Half> da(ha), db(hb), dc(static_cast<std::size_t>(kM) * kN);
  gpu::gemm_forward_typed(type, da.get(), db.get(), dc.get(), kM, kN, kK, false, true);
  std::vector<float> c(kM * kN), got(kM * kN);
  cpu::gemm_forward(a.data(), b.data(), c.data(), kM, kN, kK, false, true);
  auto hc = dc.to_host();
  for (size_t i = 0; i < got.size(); ++i) got[i] = to_float(hc[i]);
  expect_all_near(got, c, tol, tol, "C");
}

using CudaGemmTyped = GpuTest;

TEST_F(CudaGemmTyped, Bf16WithFp32Accumulation) {
  check_half_gemm<__nv_bfloat16>(gpu::GemmType::bf16, [](float x) { return __float2bfloat16_rn(x); },
                                 [](__nv_bfloat16 x) { return __bfloat162float(x); }, kBf16Tol);
}

TEST_F(CudaGemmTyped, Fp16WithFp32Accumulation) {
  check_half_gemm<__half>(gpu::GemmType::fp16, [](float x) { return __float2half_rn(x); },
                          [](__half x) { return __half2float(x); }, kFp16Tol);
}

// TF32 rounds each input to a 10-bit mantissa (2^-11 relative): with k = 29 products of
// magnitude <= 1 the sum is off by at most ~29 * 2 * 2^-11 = 0.03, typically far less.
TEST_F(CudaGemmTyped, Tf32IsCloseToFp32) {
  auto a = random_vector(kM * kK, 11), b = random_vector(kK * kN, 12);
  DeviceFloats da(a), db(b), dc(static_cast<std::size_t>(kM) * kN);
  gpu::gemm_forward_typed(gpu::GemmType::tf32, da.get(), db.get(), dc.get(), kM, kN, kK, false, false);
  std::vector<float> c(kM * kN);
  cpu::gemm_forward(a.data(), b.data(), c.data(), kM, kN, kK, false, false);
  expect_all_near(dc.to_host(), c, 3e-2, 0.0, "C");
}

using CudaLinear = GpuTest;

TEST_F(CudaLinear, ForwardAndBackwardMatchCpu) {
  const int tokens = 19, in = 24, out = 17;
  auto x = random_vector(tokens * in, 13), w = random_vector(out * in, 14), b = random_vector(out, 15);
  auto dy = random_vector(tokens * out, 16), dw = random_vector(out * in, 17), db = random_vector(out, 18);
  std::vector<float> y(tokens * out), dx(tokens * in);
  DeviceFloats d_x(x), d_w(w), d_b(b), d_y(y), d_dy(dy), d_dx(dx), d_dw(dw), d_db(db);
  gpu::linear_forward(d_x.get(), d_w.get(), d_b.get(), d_y.get(), tokens, in, out);
  gpu::linear_backward_input(d_dy.get(), d_w.get(), d_dx.get(), tokens, in, out);
  gpu::linear_backward_weight(d_dy.get(), d_x.get(), d_dw.get(), tokens, in, out, true);
  gpu::linear_backward_bias(d_dy.get(), d_db.get(), tokens, out, true);
  cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), tokens, in, out);
  cpu::linear_backward_input(dy.data(), w.data(), dx.data(), tokens, in, out);
  cpu::linear_backward_weight(dy.data(), x.data(), dw.data(), tokens, in, out, true);
  cpu::linear_backward_bias(dy.data(), db.data(), tokens, out, true);
  expect_all_near(d_y.to_host(), y, kFp32Tol, kFp32Tol, "y");
  expect_all_near(d_dx.to_host(), dx, kFp32Tol, kFp32Tol, "dx");
  expect_all_near(d_dw.to_host(), dw, kFp32Tol, kFp32Tol, "dW");
  expect_all_near(d_db.to_host(), db, kFp32Tol, kFp32Tol, "db");
}

}  // namespace
}  // namespace twinsim::cuda_testing
#endif
