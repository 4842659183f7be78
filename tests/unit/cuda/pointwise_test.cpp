// Element-wise CUDA kernels against the CPU kernels on the same random inputs: GeLU,
// bias + GeLU, SwiGLU, RoPE, AdamW and SGD.
#ifdef TWINSIM_HAVE_CUDA
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/linear.hpp"
#include "kernels/cpu/optimizer.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cuda/activation.hpp"
#include "kernels/cuda/optimizer.hpp"
#include "kernels/cuda/rope.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::cuda_testing {
namespace {

namespace cpu = kernels::cpu;
namespace gpu = kernels::cuda;

using CudaPointwise = GpuTest;

TEST_F(CudaPointwise, GeluForwardBackward) {
  const long n = 3001;  // not a multiple of the block size
  auto x = random_vector(n, 1, -4.0f, 4.0f), dy = random_vector(n, 2);
  std::vector<float> y(n), dx(n);
  DeviceFloats d_x(x), d_dy(dy), d_y(y), d_dx(dx);
  gpu::gelu_forward(d_x.get(), d_y.get(), n);
  gpu::gelu_backward(d_dy.get(), d_x.get(), d_dx.get(), n);
  cpu::gelu_forward(x.data(), y.data(), n);
  cpu::gelu_backward(dy.data(), x.data(), dx.data(), n);
  expect_all_near(d_y.to_host(), y, kFp32Tol, kFp32Tol, "y");
  expect_all_near(d_dx.to_host(), dx, kFp32Tol, kFp32Tol, "dx");
}

// The fused kernel against its unfused CPU equivalent: add the bias, GeLU, and the bias
// grad as the column sums of dx (cpu::linear_backward_bias).
TEST_F(CudaPointwise, BiasGeluMatchesBiasAddThenGelu) {
  const int rows = 13, cols = 70;
  auto x = random_vector(rows * cols, 3, -3.0f, 3.0f), bias = random_vector(cols, 4);
  auto dy = random_vector(rows * cols, 5), dbias = random_vector(cols, 6);
  std::vector<float> y(rows * cols), dx(rows * cols);
  DeviceFloats d_x(x), d_b(bias), d_dy(dy), d_db(dbias), d_y(y), d_dx(dx);
  gpu::bias_gelu_forward(d_x.get(), d_b.get(), d_y.get(), rows, cols);
  gpu::bias_gelu_backward(d_dy.get(), d_x.get(), d_b.get(), d_dx.get(), d_db.get(), rows, cols, true);
  std::vector<float> pre(x);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) pre[r * cols + c] += bias[c];
  cpu::gelu_forward(pre.data(), y.data(), rows * cols);
  cpu::gelu_backward(dy.data(), pre.data(), dx.data(), rows * cols);
  cpu::linear_backward_bias(dx.data(), dbias.data(), rows, cols, true);
  expect_all_near(d_y.to_host(), y, kFp32Tol, kFp32Tol, "y");
  expect_all_near(d_dx.to_host(), dx, kFp32Tol, kFp32Tol, "dx");
  expect_all_near(d_db.to_host(), dbias, kFp32ReduceTol, kFp32ReduceTol, "dbias");
}

TEST_F(CudaPointwise, SwigluForwardBackward) {
  const long n = 2049;
  auto gate = random_vector(n, 7, -4.0f, 4.0f), up = random_vector(n, 8), dy = random_vector(n, 9);
  std::vector<float> y(n), dgate(n), dup(n);
  DeviceFloats d_g(gate), d_u(up), d_dy(dy), d_y(y), d_dg(dgate), d_du(dup);
  gpu::swiglu_forward(d_g.get(), d_u.get(), d_y.get(), n);
  gpu::swiglu_backward(d_dy.get(), d_g.get(), d_u.get(), d_dg.get(), d_du.get(), n);
  cpu::swiglu_forward(gate.data(), up.data(), y.data(), n);
  cpu::swiglu_backward(dy.data(), gate.data(), up.data(), dgate.data(), dup.data(), n);
  expect_all_near(d_y.to_host(), y, kFp32Tol, kFp32Tol, "y");
  expect_all_near(d_dg.to_host(), dgate, kFp32Tol, kFp32Tol, "dgate");
  expect_all_near(d_du.to_host(), dup, kFp32Tol, kFp32Tol, "dup");
}

// Positions stay below ~20: the angle pos * theta^(-2i/d) carries powf's few-ulp error
// times pos, so at long positions GPU and CPU legitimately drift apart by ~pos * 1e-7.
TEST_F(CudaPointwise, RopeForwardBackwardWithOffset) {
  const int batch = 2, seq = 9, heads = 3, dim = 16, offset = 7;
  const long n = static_cast<long>(batch) * seq * heads * dim;
  auto x = random_vector(n, 10), dy = random_vector(n, 11);
  std::vector<float> y(n), dx(n);
  DeviceFloats d_x(x), d_dy(dy), d_y(y), d_dx(dx);
  gpu::rope_forward(d_x.get(), d_y.get(), batch, seq, heads, dim, 10000.0f, offset);
  gpu::rope_backward(d_dy.get(), d_dx.get(), batch, seq, heads, dim, 10000.0f, offset);
  cpu::rope_forward(x.data(), y.data(), batch, seq, heads, dim, 10000.0f, offset);
  cpu::rope_backward(dy.data(), dx.data(), batch, seq, heads, dim, 10000.0f, offset);
  expect_all_near(d_y.to_host(), y, kFp32Tol, kFp32Tol, "y");
  expect_all_near(d_dx.to_host(), dx, kFp32Tol, kFp32Tol, "dx");
}

TEST_F(CudaPointwise, AdamWThreeSteps) {
  const long n = 1000;
  auto p = random_vector(n, 12), m = std::vector<float>(n), v = std::vector<float>(n);
  DeviceFloats d_p(p), d_m(m), d_v(v);
  gpu::AdamWConfig config{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
  for (int step = 1; step <= 3; ++step) {
    auto g = random_vector(n, 100 + step);
    DeviceFloats d_g(g);
    gpu::adamw_step(d_p.get(), d_g.get(), d_m.get(), d_v.get(), n, step, config);
    cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), n, step, config);
    d_g.to_host();  // waits for the step before d_g is freed
  }
  expect_all_near(d_p.to_host(), p, kFp32Tol, kFp32Tol, "params");
  expect_all_near(d_m.to_host(), m, kFp32Tol, kFp32Tol, "m");
  expect_all_near(d_v.to_host(), v, kFp32Tol, kFp32Tol, "v");
}

TEST_F(CudaPointwise, SgdWithMomentumTwoSteps) {
  const long n = 777;
  auto p = random_vector(n, 13), buf = std::vector<float>(n);
  DeviceFloats d_p(p), d_buf(buf);
  gpu::SgdConfig config{0.05f, 0.9f, 0.01f};
  for (int step = 1; step <= 2; ++step) {
    auto g = random_vector(n, 200 + step);
    DeviceFloats d_g(g);
    gpu::sgd_step(d_p.get(), d_g.get(), d_buf.get(), n, config);
    cpu::sgd_step(p.data(), g.data(), buf.data(), n, config);
    d_g.to_host();
  }
  expect_all_near(d_p.to_host(), p, kFp32Tol, kFp32Tol, "params");
  expect_all_near(d_buf.to_host(), buf, kFp32Tol, kFp32Tol, "momentum");
}

}  // namespace
}  // namespace twinsim::cuda_testing
#endif
