// LayerNorm, RMSNorm and the fused softmax cross-entropy on the GPU against the CPU
// kernels on the same random inputs.
#ifdef TWINSIM_HAVE_CUDA
#include "kernels/cpu/loss.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/cuda/loss.hpp"
#include "kernels/cuda/norm.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::cuda_testing {
namespace {

namespace cpu = kernels::cpu;
namespace gpu = kernels::cuda;

using CudaNorm = GpuTest;

// dim 300: more than one pass of the 256-thread block, and not a multiple of 32.
constexpr int kRows = 11, kDim = 300;

TEST_F(CudaNorm, LayerNormForwardBackwardAccumulating) {
  auto x = random_vector(kRows * kDim, 1, -2.0f, 3.0f), gamma = random_vector(kDim, 2);
  auto beta = random_vector(kDim, 3), dy = random_vector(kRows * kDim, 4);
  auto dgamma = random_vector(kDim, 5), dbeta = random_vector(kDim, 6);  // accumulate onto these
  std::vector<float> y(kRows * kDim), mean(kRows), rstd(kRows), dx(kRows * kDim);
  DeviceFloats d_x(x), d_g(gamma), d_b(beta), d_dy(dy), d_dg(dgamma), d_db(dbeta), d_y(y),
      d_mean(mean), d_rstd(rstd), d_dx(dx);
  gpu::layernorm_forward(d_x.get(), d_g.get(), d_b.get(), d_y.get(), d_mean.get(), d_rstd.get(), kRows, kDim, 1e-5f);
  gpu::layernorm_backward(d_dy.get(), d_x.get(), d_g.get(), d_mean.get(), d_rstd.get(), d_dx.get(),
                          d_dg.get(), d_db.get(), kRows, kDim, true);
  cpu::layernorm_forward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), kRows, kDim, 1e-5f);
  cpu::layernorm_backward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(),
                          dgamma.data(), dbeta.data(), kRows, kDim, true);
  expect_all_near(d_y.to_host(), y, kFp32ReduceTol, kFp32ReduceTol, "y");
  expect_all_near(d_mean.to_host(), mean, kFp32ReduceTol, kFp32ReduceTol, "mean");
  expect_all_near(d_rstd.to_host(), rstd, kFp32ReduceTol, kFp32ReduceTol, "rstd");
  expect_all_near(d_dx.to_host(), dx, kFp32ReduceTol, kFp32ReduceTol, "dx");
  expect_all_near(d_dg.to_host(), dgamma, kFp32ReduceTol, kFp32ReduceTol, "dgamma");
  expect_all_near(d_db.to_host(), dbeta, kFp32ReduceTol, kFp32ReduceTol, "dbeta");
}

TEST_F(CudaNorm, RmsNormForwardBackwardOverwriting) {
  auto x = random_vector(kRows * kDim, 7), gamma = random_vector(kDim, 8), dy = random_vector(kRows * kDim, 9);
  std::vector<float> y(kRows * kDim), rstd(kRows), dx(kRows * kDim), dgamma(kDim);
  DeviceFloats d_x(x), d_g(gamma), d_dy(dy), d_y(y), d_rstd(rstd), d_dx(dx),
      d_dg(random_vector(kDim, 10));  // garbage that must be overwritten
  gpu::rmsnorm_forward(d_x.get(), d_g.get(), d_y.get(), d_rstd.get(), kRows, kDim, 1e-6f);
  gpu::rmsnorm_backward(d_dy.get(), d_x.get(), d_g.get(), d_rstd.get(), d_dx.get(), d_dg.get(), kRows, kDim, false);
  cpu::rmsnorm_forward(x.data(), gamma.data(), y.data(), rstd.data(), kRows, kDim, 1e-6f);
  cpu::rmsnorm_backward(dy.data(), x.data(), gamma.data(), rstd.data(), dx.data(), dgamma.data(), kRows, kDim, false);
  expect_all_near(d_y.to_host(), y, kFp32ReduceTol, kFp32ReduceTol, "y");
  expect_all_near(d_rstd.to_host(), rstd, kFp32ReduceTol, kFp32ReduceTol, "rstd");
  expect_all_near(d_dx.to_host(), dx, kFp32ReduceTol, kFp32ReduceTol, "dx");
  expect_all_near(d_dg.to_host(), dgamma, kFp32ReduceTol, kFp32ReduceTol, "dgamma");
}

using CudaLoss = GpuTest;

TEST_F(CudaLoss, CrossEntropyForwardBackwardInPlace) {
  const int tokens = 21, vocab = 1003;
  auto logits = random_vector(tokens * vocab, 11, -8.0f, 8.0f);
  std::vector<int> targets(tokens);
  for (int t = 0; t < tokens; ++t) targets[t] = (t * 389) % vocab;
  std::vector<float> lse(tokens), dlogits(tokens * vocab);
  DeviceFloats d_logits(logits), d_lse(lse);
  DeviceVector<int> d_targets(targets);
  float gpu_loss = gpu::cross_entropy_forward(d_logits.get(), d_targets.get(), d_lse.get(), tokens, vocab);
  // in place: the gradient overwrites the logits, as Megatron does
  gpu::cross_entropy_backward(d_logits.get(), d_targets.get(), d_lse.get(), 2.0f, d_logits.get(), tokens, vocab);
  float cpu_loss = cpu::cross_entropy_forward(logits.data(), targets.data(), lse.data(), tokens, vocab);
  cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), 2.0f, dlogits.data(), tokens, vocab);
  EXPECT_NEAR(gpu_loss, cpu_loss, kFp32ReduceTol * (1 + std::abs(cpu_loss)));
  expect_all_near(d_lse.to_host(), lse, kFp32ReduceTol, kFp32ReduceTol, "logsumexp");
  expect_all_near(d_logits.to_host(), dlogits, kFp32ReduceTol, kFp32ReduceTol, "dlogits");
}

}  // namespace
}  // namespace twinsim::cuda_testing
#endif
