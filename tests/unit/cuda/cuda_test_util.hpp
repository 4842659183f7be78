#pragma once
// Helpers for the GPU tests: skip without a GPU, device buffers filled from and read
// back into host vectors. The host-side references are the CPU kernels (kernels/cpu),
// run on the same random inputs (random_vector, expect_all_near from the CPU tests).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exec/cuda/device_check.hpp"
#include "kernels/cuda/check.hpp"
#include "tests/unit/kernels/kernel_test_util.hpp"

namespace twinsim::cuda_testing {

using kernels::testing::expect_all_near;
using kernels::testing::random_vector;

// Per-dtype tolerances, |gpu - cpu| <= atol + rtol |cpu|. fp32 element-wise math differs
// only by the last bits of expf/tanhf (CUDA Programming Guide, "Mathematical Functions":
// 2 ulp) and by FMA contraction; reductions differ by summation order, ~n eps.
constexpr double kFp32Tol = 1e-5;
constexpr double kFp32ReduceTol = 1e-4;
// bf16 keeps 8 significant bits: one rounding of the output is 2^-9 relative (0.2%).
constexpr double kBf16Tol = 1e-2;
// fp16 keeps 11 bits: 2^-12 relative per rounding.
constexpr double kFp16Tol = 2e-3;

// Every test that touches the GPU derives from this fixture: SetUp skips with the reason.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!exec::cuda_device_available(&why)) GTEST_SKIP() << why;
  }
};

// A device copy of a host vector; read it back with to_host().
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : size_(host.size()) {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
    CUDA_CHECK(cudaMemcpy(data_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  explicit DeviceVector(std::size_t size) : DeviceVector(std::vector<T>(size)) {}
  ~DeviceVector() { cudaFree(data_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;

  T* get() { return data_; }
  const T* get() const { return data_; }
  std::size_t bytes() const { return size_ * sizeof(T); }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    CUDA_CHECK(cudaDeviceSynchronize());  // kernels run on the default stream, asynchronously
    CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

using DeviceFloats = DeviceVector<float>;

}  // namespace twinsim::cuda_testing
