// exec/cuda on a GPU: the device allocator's accounting, CUDA-event op timing into the
// profiler, and a single-rank NCCL communicator over MPI (the 2-rank check is
// nccl_mpi_check.cc, run by ctest under mpirun).
#ifdef TWINSIM_HAVE_CUDA
#include "exec/cuda/device_allocator.hpp"
#include "exec/cuda/event_timer.hpp"
#include "exec/cuda/nccl_communicator.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "kernels/cuda/activation.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::cuda_testing {
namespace {

using exec::MemCategory;

using CudaRuntime = GpuTest;

TEST_F(CudaRuntime, AllocatorCountsPerCategoryAndPeakOfTotal) {
  exec::DeviceAllocator alloc;
  void* params = alloc.allocate(1000, MemCategory::params);
  void* acts = alloc.allocate(4000, MemCategory::activations);
  alloc.deallocate(acts, 4000, MemCategory::activations);
  void* grads = alloc.allocate(1000, MemCategory::grads);
  const auto& s = alloc.stats();
  EXPECT_EQ(s.total_current, 2000);
  EXPECT_EQ(s.total_peak, 5000);
  EXPECT_EQ(s.at_total_peak_of(MemCategory::activations), 4000);
  EXPECT_EQ(s.at_total_peak_of(MemCategory::grads), 0);
  EXPECT_EQ(s.peak_of(MemCategory::grads), 1000);
  EXPECT_EQ(s.allocations, 3);
  std::vector<float> back(250, 1.0f);  // allocations are zero-filled, like the CPU allocator's
  CUDA_CHECK(cudaMemcpy(back.data(), params, 1000, cudaMemcpyDeviceToHost));
  for (float x : back) ASSERT_EQ(x, 0.0f);
  alloc.deallocate(params, 1000, MemCategory::params);
  alloc.deallocate(grads, 1000, MemCategory::grads);
  EXPECT_EQ(alloc.stats().total_current, 0);
}

TEST_F(CudaRuntime, EventTimerReportsEachOpToTheProfiler) {
  exec::Profiler profiler;
  exec::CudaOpTimer timer(profiler, nullptr);
  const long n = 1 << 20;
  DeviceFloats x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  {
    exec::CudaOpScope op(timer, "layer0.mlp.act.fwd");
    kernels::cuda::gelu_forward(x.get(), y.get(), n);
  }
  {
    exec::CudaOpScope op(timer, "layer0.mlp.act.bwd_dgrad");
    kernels::cuda::gelu_backward(x.get(), x.get(), y.get(), n);
  }
  EXPECT_TRUE(profiler.events().empty());  // nothing is reported before flush()
  timer.flush();
  ASSERT_EQ(profiler.events().size(), 2u);
  EXPECT_EQ(profiler.events()[0].name, "layer0.mlp.act.fwd");
  EXPECT_GT(profiler.events()[0].duration_us, 0.0);
  // stream order: the second op starts no earlier than the first ends (to the us rounding)
  EXPECT_GE(profiler.events()[1].start_us + 1.0,
            profiler.events()[0].start_us + profiler.events()[0].duration_us);
}

TEST_F(CudaRuntime, SingleRankNcclCollectivesAreIdentities) {
  exec::MpiSession mpi;
  exec::NcclCommunicator comm(exec::MpiCommunicator::world());
  ASSERT_EQ(comm.size(), 1);
  auto host = random_vector(1000, 1);
  DeviceFloats data(host), gathered(host.size());
  comm.all_reduce(data.get(), host.size());
  comm.all_gather(data.get(), gathered.get(), host.size());
  auto pending = comm.all_reduce_async(data.get(), host.size(), exec::ReduceOp::max);
  comm.wait(pending);
  expect_all_near(data.to_host(), host, 0.0, 0.0, "all_reduce");
  expect_all_near(gathered.to_host(), host, 0.0, 0.0, "all_gather");
  auto sub = comm.split(0, 0);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 1);
}

}  // namespace
}  // namespace twinsim::cuda_testing
#endif
