#pragma once
// PyTorch's CUDA caching allocator's size rules (c10/cuda/CUDACachingAllocator.cpp and
// c10/core/AllocatorConfig.h: kMinBlockSize, kSmallSize, kSmallBuffer, kMinLargeAlloc,
// kLargeBuffer, kRoundLarge; round_size, get_allocation_size, should_split), the one home of
// these numbers for the simulator's reserved-memory model (sim/memory/caching_allocator) and
// anything that reports reserved bytes the same way. Bytes throughout.
#include <cstdint>

namespace twinsim::caching_allocator {

inline constexpr std::int64_t kMinBlockSize = 512;        // every request rounds up to 512 B
inline constexpr std::int64_t kSmallSize = 1048576;       // the largest "small" request, 1 MiB
inline constexpr std::int64_t kSmallBuffer = 2097152;     // small requests share 2 MiB segments
inline constexpr std::int64_t kMinLargeAlloc = 10485760;  // 1-10 MiB requests get a 20 MiB segment
inline constexpr std::int64_t kLargeBuffer = 20971520;    // ... which later requests may share
inline constexpr std::int64_t kRoundLarge = 2097152;      // larger segments round up to 2 MiB

constexpr std::int64_t round_up(std::int64_t bytes, std::int64_t to) { return (bytes + to - 1) / to * to; }

// The block a request takes: at least 512 B, a multiple of 512 (round_size).
constexpr std::int64_t block_size(std::int64_t requested) {
  return requested < kMinBlockSize ? kMinBlockSize : round_up(requested, kMinBlockSize);
}

// Blocks of at most 1 MiB come from the small pool, the rest from the large one.
constexpr bool small_pool(std::int64_t block) { return block <= kSmallSize; }

// The segment cudaMalloc'd when no cached block fits a block of this size
// (get_allocation_size).
constexpr std::int64_t segment_size(std::int64_t block) {
  if (block <= kSmallSize) return kSmallBuffer;
  if (block < kMinLargeAlloc) return kLargeBuffer;
  return round_up(block, kRoundLarge);
}

// Whether a free block of `available` bytes taken for a block of `block` bytes is split, the
// rest staying cached (should_split): small blocks keep any 512 B rest, large ones a rest of
// more than 1 MiB (a smaller rest stays with the block, allocated and unusable).
constexpr bool splits(std::int64_t available, std::int64_t block) {
  const std::int64_t rest = available - block;
  return small_pool(block) ? rest >= kMinBlockSize : rest > kSmallSize;
}

// expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF): each pool is one segment that grows by
// mapping pages of this size at its end (ExpandableSegment's segment_size).
constexpr std::int64_t expandable_page(bool small) { return small ? kSmallBuffer : kLargeBuffer; }

}  // namespace twinsim::caching_allocator
