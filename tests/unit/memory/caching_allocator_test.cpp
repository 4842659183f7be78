// The caching allocator model (sim/memory/caching_allocator) on small allocation sequences,
// each expected figure worked out by hand from PyTorch's rules
// (models/caching_allocator_rules.hpp: 512 B blocks, 2 MiB small segments, 20 MiB segments
// for 1-10 MiB requests, larger ones rounded to 2 MiB; best fit; split rests over 1 MiB).
#include <gtest/gtest.h>

#include "models/caching_allocator_rules.hpp"
#include "sim/memory/caching_allocator.hpp"

namespace twinsim {
namespace {

constexpr std::int64_t MiB = 1 << 20;

TEST(CachingAllocator, SmallRequestsShareOneTwoMibSegment) {
  CachingAllocatorModel a;
  a.allocate(1);     // a 512 B block of a new 2 MiB segment
  a.allocate(1000);  // 1024 B, split from the same segment
  EXPECT_EQ(a.allocated_bytes(), 512 + 1024);
  EXPECT_EQ(a.reserved_bytes(), 2 * MiB);
}

TEST(CachingAllocator, MidSizedRequestsPackIntoTwentyMibSegments) {
  CachingAllocatorModel a;
  for (int i = 0; i < 4; ++i) a.allocate(5 * MiB);  // 20, then rests of 15, 10, 5 MiB
  EXPECT_EQ(a.reserved_bytes(), 20 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 20 * MiB);
  a.allocate(5 * MiB);  // nothing cached: a second 20 MiB segment
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
}

TEST(CachingAllocator, ARestOfOneMibOrLessStaysWithTheBlock) {
  CachingAllocatorModel a;
  a.allocate(11 * MiB);  // the segment rounds to 12 MiB; the 1 MiB rest is not split off
  EXPECT_EQ(a.reserved_bytes(), 12 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 12 * MiB);
}

TEST(CachingAllocator, BestFitSplitsTheSmallestFreeBlockThatHolds) {
  CachingAllocatorModel a;
  const auto thirty = a.allocate(30 * MiB), fifty = a.allocate(50 * MiB);
  a.free(thirty);
  a.free(fifty);
  a.allocate(25 * MiB);  // from the 30 MiB block (its 5 MiB rest split off), not the 50
  a.allocate(50 * MiB);  // the 50 MiB block is still whole
  EXPECT_EQ(a.reserved_bytes(), 80 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 75 * MiB);
}

// Three 100 MiB tensors, the outer two freed, then 200 MiB (the sequence of the next two tests).
void fragment(CachingAllocatorModel& a) {
  const auto first = a.allocate(100 * MiB);
  a.allocate(100 * MiB);
  const auto third = a.allocate(100 * MiB);
  a.free(first);
  a.free(third);
  a.allocate(200 * MiB);
}

// Three 100 MiB tensors, the outer two freed, then 200 MiB: the two free blocks lie in
// separate segments and cannot merge, so a third segment is reserved (500 MiB for 300
// allocated); an expandable segment holds all three in one range, its free 100 MiB at the end
// grows by 100 MiB (400 MiB).
TEST(CachingAllocator, FragmentationAndTheExpandableSegment) {
  for (const bool expandable : {false, true}) {
    CachingAllocatorModel a({expandable, 0});
    fragment(a);
    EXPECT_EQ(a.allocated_bytes(), 300 * MiB);
    EXPECT_EQ(a.peak_reserved_bytes(), (expandable ? 400 : 500) * MiB) << expandable;
  }
}

// The same sequence under a 400 MiB device: the reserve of 200 MiB would pass it, so the two
// free segments go back first (300 MiB reserved at the end, 300 at the peak) and no OOM.
TEST(CachingAllocator, AtTheCapacityTheCacheIsReleasedFirst) {
  CachingAllocatorModel a({false, 400 * MiB});
  fragment(a);
  EXPECT_EQ(a.reserved_bytes(), 300 * MiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 300 * MiB);
  EXPECT_FALSE(a.out_of_memory());
  a.allocate(200 * MiB);  // 500 MiB live: no cache to give back
  EXPECT_TRUE(a.out_of_memory());
}

// An expandable segment maps 20 MiB pages: 30 MiB reserves 40; a freed block in the middle
// merges with its free neighbours and serves the next request.
TEST(CachingAllocator, ExpandablePagesAndMerging) {
  CachingAllocatorModel a({true, 0});
  const auto x = a.allocate(30 * MiB);  // 40 MiB mapped, 10 free at the end
  const auto y = a.allocate(8 * MiB);   // from the free 10 (its 2 MiB rest split off)
  a.allocate(2 * MiB);                  // the 2 MiB rest: still 40 reserved
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
  a.free(x);
  a.free(y);                 // x and y merge: 38 MiB free at the start
  a.allocate(38 * MiB);      // fits exactly
  EXPECT_EQ(a.reserved_bytes(), 40 * MiB);
  EXPECT_EQ(a.allocated_bytes(), 40 * MiB);
}

TEST(CachingAllocator, FreeingABlockTwiceIsRefused) {
  CachingAllocatorModel a;
  const auto h = a.allocate(4096);
  a.free(h);
  EXPECT_THROW(a.free(h), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim
