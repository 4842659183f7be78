// Tests that need no GPU: the device check's answer, the error messages of CUDA_CHECK /
// CUBLAS_CHECK / NCCL_CHECK, and argument checks that fire before anything is launched.
// They run everywhere, so CI checks them even where every kernel test is skipped.
#include <gtest/gtest.h>

#include <string>

#include "exec/cuda/device_check.hpp"

TEST(DeviceCheck, SaysWhyWhenNoGpuAndNamesTheDeviceOtherwise) {
  std::string why;
  bool available = twinsim::exec::cuda_device_available(&why);
  if (available) {
    EXPECT_NE(why.find("sm_"), std::string::npos) << why;
  } else {
    EXPECT_NE(why.find("no GPU"), std::string::npos) << why;
  }
  EXPECT_EQ(twinsim::exec::cuda_device_available(nullptr), available);  // null why is allowed
}

#ifndef TWINSIM_HAVE_CUDA

TEST(CudaBackend, NotBuilt) {
  EXPECT_FALSE(twinsim::exec::cuda_backend_built());
  GTEST_SKIP() << "built without the CUDA backend (nvcc not found or TWINSIM_CUDA=OFF): "
                  "no CUDA kernel test was compiled";
}

#else

#include <functional>
#include <stdexcept>

#include "exec/cuda/device_allocator.hpp"
#include "exec/cuda/nccl_check.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/flash_attention.hpp"

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const twinsim::kernels::cuda::CudaError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CudaBackend, Built) { EXPECT_TRUE(twinsim::exec::cuda_backend_built()); }

TEST(CudaCheck, NamesCallPlaceErrorAndHint) {
  std::string m = message_of([] {
    twinsim::kernels::cuda::check_cuda(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "a.cpp", 12);
  });
  EXPECT_NE(m.find("cudaMalloc(&p, n) failed at a.cpp:12"), std::string::npos) << m;
  EXPECT_NE(m.find("cudaErrorMemoryAllocation"), std::string::npos) << m;
  EXPECT_NE(m.find("Hint: the device is full"), std::string::npos) << m;
}

TEST(CudaCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  EXPECT_NO_THROW(NCCL_CHECK(ncclSuccess));
}

TEST(CudaCheck, MacroRecordsThisFileAndLine) {
  int line = __LINE__ + 1;
  std::string m = message_of([] { CUDA_CHECK(cudaErrorNoDevice); });
  EXPECT_NE(m.find("check_test.cpp:" + std::to_string(line)), std::string::npos) << m;
  EXPECT_NE(m.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << m;  // the hint
}

TEST(CudaCheck, CublasAndNcclMessages) {
  std::string cublas = message_of([] { CUBLAS_CHECK(CUBLAS_STATUS_ARCH_MISMATCH); });
  EXPECT_NE(cublas.find("CUBLAS_STATUS_ARCH_MISMATCH"), std::string::npos) << cublas;
  EXPECT_NE(cublas.find("sm_80"), std::string::npos) << cublas;
  std::string nccl = message_of([] { NCCL_CHECK(ncclInvalidUsage); });
  EXPECT_NE(nccl.find("ncclInvalidUsage"), std::string::npos) << nccl;
  EXPECT_NE(nccl.find("two ranks on one GPU"), std::string::npos) << nccl;
}

// The capacity check comes before cudaMalloc, so it is testable without a GPU, and it
// must fail the same way as the CPU TrackedAllocator does.
TEST(DeviceAllocator, RequestOverCapacityThrowsAllocationErrorAndCountsNothing) {
  twinsim::exec::DeviceAllocator alloc(1000);
  try {
    alloc.allocate(1500, twinsim::exec::MemCategory::activations, "attn.probs");
    FAIL() << "expected AllocationError";
  } catch (const twinsim::exec::AllocationError& e) {
    EXPECT_EQ(e.category(), twinsim::exec::MemCategory::activations);
    EXPECT_EQ(e.requested_bytes(), 1500);
    EXPECT_NE(std::string(e.what()).find("attn.probs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc.stats().total_current, 0);
  EXPECT_EQ(alloc.stats().allocations, 0);
}

TEST(FlashAttentionCuda, RejectsUnsupportedShapesBeforeLaunching) {
  twinsim::kernels::AttentionShape shape{1, 8, 4, 4, 160};
  try {
    twinsim::kernels::cuda::flash_attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, shape);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim = 160"), std::string::npos) << e.what();
  }
  shape = {1, 8, 6, 4, 64};  // 4 kv heads do not divide 6 heads
  EXPECT_THROW(twinsim::kernels::cuda::flash_attention_forward(nullptr, nullptr, nullptr, nullptr,
                                                               nullptr, shape),
               std::invalid_argument);
}

#endif
