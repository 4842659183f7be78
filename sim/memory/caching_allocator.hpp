#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) on one
// stream: what a sequence of allocations and frees reserves from the device, beside what it
// has allocated. The size rules are models/caching_allocator_rules.hpp's. What it does:
//   * a request takes the smallest cached free block of its pool that fits (best fit,
//     get_free_block), split when the rest is worth keeping (should_split);
//   * with none, a new segment is reserved (cudaMalloc of get_allocation_size); with
//     expandable segments the pool's one segment grows at its end instead, by whole pages,
//     taking in a free block at its end;
//   * a freed block merges with free neighbours of its segment and stays cached; segments are
//     returned only when a reserve would pass the capacity (release_cached_blocks: every
//     segment that is one free block; expandable: the free pages at the segment's end).
// Reserved minus allocated is what the allocation pattern costs: rounding and fragmentation.
// One stream's pool (sim/memory/reserved_memory replays FSDP's all-gather and reduce-scatter
// streams as pools of their own, StackSpec::fsdp_stream_pools). Not modelled: max_split_size_mb, roundup_power2_divisions, garbage collection,
// interior pages an expandable segment unmaps under pressure.
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace twinsim {

struct CachingAllocatorOptions {
  bool expandable_segments = false;
  std::int64_t capacity_bytes = 0;  // the most it may reserve; 0: no limit
};

class CachingAllocatorModel {
 public:
  using Handle = int;
  explicit CachingAllocatorModel(CachingAllocatorOptions options = {});

  Handle allocate(std::int64_t bytes);
  void free(Handle handle);

  std::int64_t allocated_bytes() const { return allocated_; }  // blocks handed out (rounded)
  std::int64_t reserved_bytes() const { return reserved_; }    // segments held
  std::int64_t peak_allocated_bytes() const { return peak_allocated_; }
  std::int64_t peak_reserved_bytes() const { return peak_reserved_; }
  // a reserve the capacity could not hold even with the cache released (an OOM in PyTorch)
  bool out_of_memory() const { return out_of_memory_; }

 private:
  struct Block {
    int segment = 0;
    std::int64_t size = 0;
    bool allocated = false;
    bool live = true;  // false once merged into a neighbour
    int prev = -1, next = -1;
  };
  struct Segment {
    bool small = false;
    std::int64_t size = 0;
    int last = -1;  // its block at the highest address
    bool released = false;
  };
  using Pool = std::set<std::pair<std::int64_t, int>>;  // free blocks by (size, index)

  Pool& pool_of(bool small) { return small ? small_pool_ : large_pool_; }
  int take_free_block(bool small, std::int64_t block);
  int reserve(bool small, std::int64_t block);
  int new_segment(bool small, std::int64_t bytes);
  int grow_expandable(bool small, std::int64_t block);
  void make_room(std::int64_t bytes);
  void release_cache();
  void split(int index, std::int64_t block);
  int merge(int block, int other);
  std::int64_t expandable_tail_free(bool small) const;
  void count_reserve(std::int64_t bytes);

  CachingAllocatorOptions options_;
  std::vector<Block> blocks_;
  std::vector<Segment> segments_;
  Pool small_pool_, large_pool_;
  int expandable_[2] = {-1, -1};  // the pools' growing segments (large, small)
  std::int64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  bool out_of_memory_ = false;
};

}  // namespace twinsim
