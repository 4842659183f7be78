// The strict-device CPU backend (exec/cpu/strict_backend.hpp) against the CPU backend: the same
// kernels through the same kernel table give the same bits, the memory accounting is the
// Allocator's, and what a GPU would not allow fails here: a host read of device memory, a host
// read of an asynchronous copy's destination before synchronize(), a kernel given host memory.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/cpu/cpu_backend.hpp"
#include "exec/cpu/staging_communicator.hpp"
#include "exec/cpu/strict_backend.hpp"
#include "tests/unit/exec_model/solo_communicator.hpp"

namespace twinsim::exec {
namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A buffer on the strict backend's device, filled from (and read back into) host vectors.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer(StrictDeviceBackend& backend, const std::vector<T>& host)
      : backend_(backend), count_(host.size()),
        data_(static_cast<T*>(backend.device_allocator().allocate(count_ * sizeof(T), MemCategory::activations))) {
    backend_.copy_to_device(data_, host.data(), count_ * sizeof(T));
  }
  ~DeviceBuffer() { backend_.device_allocator().deallocate(data_, count_ * sizeof(T), MemCategory::activations); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() { return data_; }
  std::vector<T> to_host() {
    std::vector<T> host(count_);
    backend_.copy_to_host(host.data(), data_, count_ * sizeof(T));
    return host;
  }

 private:
  StrictDeviceBackend& backend_;
  std::size_t count_;
  T* data_;
};

template <class T>
std::vector<T> stored(const std::vector<float>& values) {
  std::vector<T> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = kernels::from_float<T>(values[i]);
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

constexpr int kTokens = 12, kIn = 16, kOut = 8;

// The linear layer's three kernels on both backends, in the storage type T.
template <class T>
void linear_pair_matches() {
  CpuBackend cpu;
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  const std::vector<T> x = stored<T>(random_floats(kTokens * kIn, 1)), w = stored<T>(random_floats(kOut * kIn, 2)),
                       bias = stored<T>(random_floats(kOut, 3)), dy = stored<T>(random_floats(kTokens * kOut, 4));
  std::vector<T> y(kTokens * kOut), dx(kTokens * kIn), dw(kOut * kIn);
  const KernelTable& host = cpu.kernels();
  host.linear_forward(x.data(), w.data(), bias.data(), y.data(), kTokens, kIn, kOut);
  host.linear_backward_input(dy.data(), w.data(), dx.data(), kTokens, kIn, kOut);
  host.linear_backward_weight(dy.data(), x.data(), dw.data(), kTokens, kIn, kOut, false);

  DeviceBuffer<T> d_x(strict, x), d_w(strict, w), d_bias(strict, bias), d_dy(strict, dy);
  DeviceBuffer<T> d_y(strict, std::vector<T>(y.size())), d_dx(strict, std::vector<T>(dx.size())),
      d_dw(strict, std::vector<T>(dw.size()));
  const KernelTable& device = strict.kernels();
  device.linear_forward(d_x.get(), d_w.get(), d_bias.get(), d_y.get(), kTokens, kIn, kOut);
  device.linear_backward_input(d_dy.get(), d_w.get(), d_dx.get(), kTokens, kIn, kOut);
  device.linear_backward_weight(d_dy.get(), d_x.get(), d_dw.get(), kTokens, kIn, kOut, false);
  EXPECT_TRUE(same_bits(d_y.to_host(), y));
  EXPECT_TRUE(same_bits(d_dx.to_host(), dx));
  EXPECT_TRUE(same_bits(d_dw.to_host(), dw));
}

TEST(StrictBackend, LinearMatchesTheCpuBackendBitwiseInFp32) { linear_pair_matches<float>(); }
TEST(StrictBackend, LinearMatchesTheCpuBackendBitwiseInBf16) { linear_pair_matches<kernels::bf16>(); }

// gemm_backward is the kernel table's (kernels/common/gemm_backward.hpp) over each backend's
// forward GEMM: the transposed cases give the same bits on both.
TEST(StrictBackend, GemmBackwardMatchesTheCpuBackendBitwise) {
  CpuBackend cpu;
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  const int m = 5, n = 7, k = 9;
  const std::vector<float> a = random_floats(m * k, 5), b = random_floats(k * n, 6), dc = random_floats(m * n, 7);
  for (const bool trans_a : {false, true})
    for (const bool trans_b : {false, true}) {
      std::vector<float> da(a.size()), db(b.size());
      cpu.kernels().gemm_backward(a.data(), b.data(), dc.data(), da.data(), db.data(), m, n, k, trans_a, trans_b);
      DeviceBuffer<float> d_a(strict, a), d_b(strict, b), d_dc(strict, dc), d_da(strict, std::vector<float>(a.size())),
          d_db(strict, std::vector<float>(b.size()));
      strict.kernels().gemm_backward(d_a.get(), d_b.get(), d_dc.get(), d_da.get(), d_db.get(), m, n, k, trans_a,
                                     trans_b);
      EXPECT_TRUE(same_bits(d_da.to_host(), da)) << "trans_a " << trans_a << " trans_b " << trans_b;
      EXPECT_TRUE(same_bits(d_db.to_host(), db)) << "trans_a " << trans_a << " trans_b " << trans_b;
    }
}

TEST(StrictBackend, AttentionAndNormMatchTheCpuBackendBitwise) {
  CpuBackend cpu;
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  kernels::AttentionShape shape;
  shape.batch = 2;
  shape.seq = 6;
  shape.heads = 4;
  shape.kv_heads = 2;
  shape.head_dim = 8;
  const std::size_t q_n = 2 * 6 * 4 * 8, kv_n = 2 * 6 * 2 * 8;
  const std::vector<float> q = random_floats(q_n, 8), k = random_floats(kv_n, 9), v = random_floats(kv_n, 10);
  std::vector<float> out(q_n), lse(2 * 4 * 6), normed(q_n), rstd(2 * 6 * 4);
  const std::vector<float> gamma = random_floats(8, 11);
  cpu.kernels().flash_attention_forward(q.data(), k.data(), v.data(), out.data(), lse.data(), shape);
  cpu.kernels().rmsnorm_forward(out.data(), gamma.data(), normed.data(), rstd.data(), 2 * 6 * 4, 8, 1e-5f);

  DeviceBuffer<float> d_q(strict, q), d_k(strict, k), d_v(strict, v), d_out(strict, std::vector<float>(q_n)),
      d_lse(strict, std::vector<float>(lse.size())), d_gamma(strict, gamma), d_normed(strict, std::vector<float>(q_n)),
      d_rstd(strict, std::vector<float>(rstd.size()));
  strict.kernels().flash_attention_forward(d_q.get(), d_k.get(), d_v.get(), d_out.get(), d_lse.get(), shape);
  strict.kernels().rmsnorm_forward(d_out.get(), d_gamma.get(), d_normed.get(), d_rstd.get(), 2 * 6 * 4, 8, 1e-5f);
  EXPECT_TRUE(same_bits(d_out.to_host(), out));
  EXPECT_TRUE(same_bits(d_lse.to_host(), lse));
  EXPECT_TRUE(same_bits(d_normed.to_host(), normed));
}

// The strict backend's device memory is counted by the same Allocator as the CPU's.
TEST(StrictBackend, DeviceMemoryIsCountedByCategoryAndCapacity) {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  const std::unique_ptr<Allocator> memory = strict.make_device_allocator(4096);
  void* weights = memory->allocate(1000, MemCategory::params);
  void* grads = memory->allocate(2000, MemCategory::grads);
  EXPECT_TRUE(strict.is_device_memory(weights));
  EXPECT_EQ(memory->stats().current_of(MemCategory::params), 1000);
  EXPECT_EQ(memory->stats().total_peak, 3000);
  EXPECT_THROW(memory->allocate(2000, MemCategory::activations), AllocationError);
  memory->deallocate(grads, 2000, MemCategory::grads);
  memory->deallocate(weights, 1000, MemCategory::params);
  EXPECT_EQ(memory->stats().total_current, 0);
}

// A zero-filled block is zero when read back through a copy (the fill ran on the stream).
TEST(StrictBackend, ZeroFilledBlocksAreZeroOnTheDevice) {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  Allocator& memory = strict.device_allocator();
  void* block = memory.allocate(256, MemCategory::buffers, "scratch", Fill::uninitialized);
  strict.fill_on_device(block, 0x7f, 256);
  memory.deallocate(block, 256, MemCategory::buffers);
  void* again = memory.allocate(256, MemCategory::buffers);  // the cached block, zero-filled
  std::vector<unsigned char> host(256, 1);
  strict.copy_to_host(host.data(), again, 256);
  EXPECT_EQ(std::vector<unsigned char>(256, 0), host);
  memory.deallocate(again, 256, MemCategory::buffers);
}

// A GPU kernel cannot read pageable host memory: the kernel is refused when it is enqueued,
// naming the kernel.
TEST(StrictBackend, AKernelGivenHostMemoryIsRefused) {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  std::vector<float> host_x(kTokens * kIn, 1.0f), host_w(kOut * kIn, 1.0f);
  DeviceBuffer<float> d_y(strict, std::vector<float>(kTokens * kOut));
  try {
    strict.kernels().linear_forward(host_x.data(), host_w.data(), nullptr, d_y.get(), kTokens, kIn, kOut);
    FAIL() << "a host pointer reached a device kernel";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("kernel linear_forward was given host memory"), std::string::npos) << e.what();
  }
}

// ---- what must fail on the strict backend, and passes silently on the CPU one

// The host reads a kernel's output straight from device memory instead of copying it back.
void read_device_memory_on_the_host() {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  DeviceBuffer<float> d_x(strict, std::vector<float>(64, 2.0f)), d_y(strict, std::vector<float>(64));
  strict.kernels().gelu_forward(d_x.get(), d_y.get(), 64);
  strict.synchronize();
  volatile float first = d_y.get()[0];  // the bug: a device pointer dereferenced on the host
  (void)first;
}

TEST(StrictBackendDeathTest, AHostReadOfDeviceMemoryDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(read_device_memory_on_the_host(), "the host touched device memory outside a backend call");
}

// The host copies a kernel's output into pinned memory asynchronously and reads it without
// waiting for the stream.
float read_async_copy(bool synchronize_first) {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  const std::unique_ptr<Allocator> pinned = strict.make_host_allocator();
  DeviceBuffer<float> d_x(strict, std::vector<float>(64, 3.0f)), d_y(strict, std::vector<float>(64));
  strict.kernels().residual_forward(d_x.get(), d_x.get(), nullptr, d_y.get(), 8, 8);  // y = x + x
  auto* host_y = static_cast<float*>(pinned->allocate(64 * sizeof(float), MemCategory::buffers));
  strict.copy_to_host_async(host_y, d_y.get(), 64 * sizeof(float));
  if (synchronize_first) strict.synchronize();
  const float value = host_y[63];  // without the synchronize: the bug
  strict.synchronize();
  pinned->deallocate(host_y, 64 * sizeof(float), MemCategory::buffers);
  return value;
}

TEST(StrictBackend, AnAsyncCopyReadAfterSynchronizeHoldsTheKernelsResult) { EXPECT_EQ(read_async_copy(true), 6.0f); }

TEST(StrictBackendDeathTest, AMissingSynchronizeBeforeReadingAnAsyncCopyDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(read_async_copy(false), "missing Backend::synchronize before reading it");
}

// The same two bugs on the CPU backend pass silently: the reason the strict backend exists.
TEST(StrictBackend, TheCpuBackendLetsTheHostReadDeviceMemory) {
  CpuBackend cpu;
  auto* y = static_cast<float*>(cpu.device_allocator().allocate(64 * sizeof(float), MemCategory::activations));
  std::vector<float> x(64, 2.0f);
  cpu.kernels().residual_forward(x.data(), x.data(), nullptr, y, 8, 8);
  EXPECT_EQ(y[0], 4.0f);
  cpu.device_allocator().deallocate(y, 64 * sizeof(float), MemCategory::activations);
}

// Collectives on device buffers: the host communicator (here a one-rank world that memmoves,
// as MPI would read the host pointers it is given) only ever sees host staging.
TEST(StrictBackend, CollectivesOnDeviceBuffersGoThroughHostStaging) {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  test::SoloCommunicator world;
  StagingCommunicator comm(strict, world);
  const std::vector<float> values = random_floats(32, 12);
  DeviceBuffer<float> send(strict, values), gathered(strict, std::vector<float>(32));
  comm.all_gather(send.get(), gathered.get(), 32);
  EXPECT_TRUE(same_bits(gathered.to_host(), values));
  comm.all_reduce(send.get(), 32);  // one rank: the sum is the values
  EXPECT_TRUE(same_bits(send.to_host(), values));
  std::vector<float> host_buffer = values;  // host memory goes through as it is
  comm.all_reduce(host_buffer.data(), host_buffer.size());
  EXPECT_EQ(host_buffer, values);
  const std::unique_ptr<Communicator> group = comm.split(0, 0);
  ASSERT_NE(group, nullptr);
  DeviceBuffer<float> again(strict, std::vector<float>(32));
  group->all_gather(send.get(), again.get(), 32);  // a group split from it stages too
  EXPECT_TRUE(same_bits(again.to_host(), values));
}

// Without the staging, the host library reads device memory and the process dies.
void gather_device_buffers_unstaged() {
  StrictDeviceBackend strict(std::size_t{64} << 20, std::size_t{16} << 20);
  test::SoloCommunicator world;
  DeviceBuffer<float> send(strict, std::vector<float>(32, 1.0f)), gathered(strict, std::vector<float>(32));
  strict.synchronize();
  world.all_gather(send.get(), gathered.get(), 32);
}

TEST(StrictBackendDeathTest, AHostCollectiveOnDeviceBuffersDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(gather_device_buffers_unstaged(), "the host touched device memory outside a backend call");
}

}  // namespace
}  // namespace twinsim::exec
