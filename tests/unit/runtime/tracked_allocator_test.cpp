// The allocator's bookkeeping, checked against hand-worked sequences of allocations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "exec/cpu/tracked_allocator.hpp"
#include "exec/runtime/typed_buffer.hpp"

namespace twinsim::exec {
namespace {

TEST(TrackedAllocator, PeakOfTheSumIsNotTheSumOfPeaks) {
  TrackedAllocator a;
  // params 1000 live throughout; activations rise to 3000 and fall; grads 2000 arrive after
  void* p = a.allocate(1000, MemCategory::params);
  void* act = a.allocate(3000, MemCategory::activations);
  a.deallocate(act, 3000, MemCategory::activations);
  void* g = a.allocate(2000, MemCategory::grads);

  const MemoryStats& s = a.stats();
  EXPECT_EQ(s.peak_of(MemCategory::params), 1000);
  EXPECT_EQ(s.peak_of(MemCategory::activations), 3000);
  EXPECT_EQ(s.peak_of(MemCategory::grads), 2000);
  EXPECT_EQ(s.total_peak, 4000);  // params + activations; the sum of peaks would be 6000
  EXPECT_EQ(s.at_total_peak_of(MemCategory::params), 1000);
  EXPECT_EQ(s.at_total_peak_of(MemCategory::activations), 3000);
  EXPECT_EQ(s.at_total_peak_of(MemCategory::grads), 0);
  EXPECT_EQ(s.total_current, 3000);
  EXPECT_EQ(s.current_of(MemCategory::activations), 0);
  EXPECT_EQ(s.allocations, 3);

  void* opt = a.allocate(1500, MemCategory::optimizer);  // 4500 > 4000: a new total peak
  EXPECT_EQ(a.stats().total_peak, 4500);
  EXPECT_EQ(a.stats().at_total_peak_of(MemCategory::activations), 0);
  EXPECT_EQ(a.stats().at_total_peak_of(MemCategory::optimizer), 1500);
  std::int64_t sum = 0;
  for (MemCategory c : kMemCategories) sum += a.stats().at_total_peak_of(c);
  EXPECT_EQ(sum, a.stats().total_peak);

  a.deallocate(p, 1000, MemCategory::params);
  a.deallocate(g, 2000, MemCategory::grads);
  a.deallocate(opt, 1500, MemCategory::optimizer);
  EXPECT_EQ(a.stats().total_current, 0);
  EXPECT_EQ(a.stats().total_peak, 4500);
}

TEST(TrackedAllocator, ResetPeaksStartsFromWhatIsLive) {
  TrackedAllocator a;
  void* p = a.allocate(100, MemCategory::params);
  void* b = a.allocate(900, MemCategory::buffers);
  a.deallocate(b, 900, MemCategory::buffers);
  a.reset_peaks();
  EXPECT_EQ(a.stats().total_peak, 100);
  EXPECT_EQ(a.stats().peak_of(MemCategory::buffers), 0);
  a.deallocate(p, 100, MemCategory::params);
}

TEST(TrackedAllocator, MemoryIsZeroedAndAligned) {
  TrackedAllocator a;
  auto* p = static_cast<unsigned char*>(a.allocate(1000, MemCategory::activations));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(p[i], 0) << i;
  a.deallocate(p, 1000, MemCategory::activations);
}

TEST(TrackedAllocator, FreedBlockIsReusedZeroedAndNotCounted) {
  TrackedAllocator a;
  auto* p = static_cast<unsigned char*>(a.allocate(1000, MemCategory::activations));
  std::memset(p, 7, 1000);
  a.deallocate(p, 1000, MemCategory::activations);
  EXPECT_EQ(a.stats().total_current, 0);  // handed back: no longer counted
  EXPECT_EQ(a.cached_bytes(), 1024);      // but kept (rounded to 64 bytes)
  // another request of the same rounded size gets the block, zero-filled again
  auto* q = static_cast<unsigned char*>(a.allocate(1010, MemCategory::grads));
  EXPECT_EQ(q, p);
  EXPECT_EQ(a.cached_bytes(), 0);
  for (int i = 0; i < 1010; ++i) ASSERT_EQ(q[i], 0) << i;
  // a different size does not take it
  a.deallocate(q, 1010, MemCategory::grads);
  void* r = a.allocate(2000, MemCategory::grads);
  EXPECT_NE(r, static_cast<void*>(q));
  EXPECT_EQ(a.stats().current_of(MemCategory::grads), 2000);
  a.deallocate(r, 2000, MemCategory::grads);
  a.release_cache();
  EXPECT_EQ(a.cached_bytes(), 0);
}

TEST(TrackedAllocator, UninitializedBlockKeepsOldBytesOrIsPoisoned) {
  TrackedAllocator a;
  a.set_poison_uninitialized(false);
  auto* p = static_cast<unsigned char*>(a.allocate(256, MemCategory::activations));
  std::memset(p, 7, 256);
  a.deallocate(p, 256, MemCategory::activations);
  auto* q = static_cast<unsigned char*>(a.allocate(256, MemCategory::activations, "out", Fill::uninitialized));
  ASSERT_EQ(q, p);
  EXPECT_EQ(q[0], 7);  // not written: an uninitialized block costs no pass over memory
  a.deallocate(q, 256, MemCategory::activations);
  a.set_poison_uninitialized(true);
  auto* f = static_cast<float*>(a.allocate(256, MemCategory::activations, "out", Fill::uninitialized));
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(std::isnan(f[i])) << i;
  a.deallocate(f, 256, MemCategory::activations);
}

TEST(TrackedAllocator, CapacityExceededNamesCategoryAndSizes) {
  TrackedAllocator a(10000);
  void* p = a.allocate(6000, MemCategory::params, "embedding.weight");
  try {
    a.allocate(5000, MemCategory::kv_cache, "layer0.kv");
    FAIL() << "6000 + 5000 > 10000 must throw";
  } catch (const AllocationError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.category(), MemCategory::kv_cache);
    EXPECT_EQ(e.requested_bytes(), 5000);
    for (const char* part : {"kv_cache", "layer0.kv", "5000", "6000", "10000", "exceeded by 1000"})
      EXPECT_NE(m.find(part), std::string::npos) << part << " missing in: " << m;
  }
  // the failed request changed nothing
  EXPECT_EQ(a.stats().total_current, 6000);
  EXPECT_EQ(a.stats().total_peak, 6000);
  EXPECT_EQ(a.stats().current_of(MemCategory::kv_cache), 0);
  void* q = a.allocate(4000, MemCategory::kv_cache);  // exactly full is allowed
  a.deallocate(q, 4000, MemCategory::kv_cache);
  a.deallocate(p, 6000, MemCategory::params);
}

TEST(TrackedAllocator, SystemRefusalIsAnAllocationError) {
  TrackedAllocator a;
  // far beyond any address space: aligned_alloc returns null
  EXPECT_THROW(a.allocate(std::size_t{1} << 62, MemCategory::grads, "huge"), AllocationError);
  EXPECT_EQ(a.stats().total_current, 0);
}

TEST(TypedBuffer, ChargesItsCategoryUntilDestroyed) {
  TrackedAllocator a;
  {
    TypedBuffer w(a, {4, 8}, MemCategory::params, "layer0.attn.qkv.weight");
    TypedBuffer h(a, {3, 5}, MemCategory::params, "layer0.attn.qkv.weight.bf16", Dtype::bf16);
    EXPECT_EQ(w.numel(), 32u);
    EXPECT_EQ(w.bytes(), 128u);
    EXPECT_EQ(h.bytes(), 30u);
    EXPECT_EQ(a.stats().current_of(MemCategory::params), 158);
    w.f32()[31] = 2.5f;
    h.u16()[14] = 0x3f80;  // bf16 1.0
    EXPECT_THROW(w.u16(), std::logic_error);
    EXPECT_THROW(h.f32(), std::logic_error);

    TypedBuffer moved = std::move(w);  // ownership moves, the bytes are charged once
    EXPECT_TRUE(w.empty());
    EXPECT_EQ(moved.f32()[31], 2.5f);
    EXPECT_EQ(moved.name(), "layer0.attn.qkv.weight");
    EXPECT_EQ(a.stats().current_of(MemCategory::params), 158);
    moved = TypedBuffer();  // release early
    EXPECT_EQ(a.stats().current_of(MemCategory::params), 30);
  }
  EXPECT_EQ(a.stats().total_current, 0);
  EXPECT_EQ(a.stats().total_peak, 158);
}

TEST(TypedBuffer, RejectsUnsupportedStorage) {
  TrackedAllocator a;
  EXPECT_THROW(TypedBuffer(a, {4}, MemCategory::params, "w", Dtype::int8), std::invalid_argument);
  EXPECT_THROW(TypedBuffer(a, {4, -1}, MemCategory::params, "w"), std::invalid_argument);
  EXPECT_EQ(a.stats().total_current, 0);
}

}  // namespace
}  // namespace twinsim::exec
