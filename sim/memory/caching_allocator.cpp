#include "sim/memory/caching_allocator.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/caching_allocator_rules.hpp"

namespace twinsim {

namespace ca = caching_allocator;

CachingAllocatorModel::CachingAllocatorModel(CachingAllocatorOptions options) : options_(options) {}

void CachingAllocatorModel::count_reserve(std::int64_t bytes) {
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

// The smallest cached block of the pool that holds `block` bytes, taken out of the pool; -1
// if none does (get_free_block).
int CachingAllocatorModel::take_free_block(bool small, std::int64_t block) {
  Pool& pool = pool_of(small);
  const auto it = pool.lower_bound({block, -1});
  if (it == pool.end()) return -1;
  const int index = it->second;
  pool.erase(it);
  return index;
}

// Before a reserve of `bytes` that would pass the capacity, the cache goes back to the device;
// what still does not fit is an out-of-memory (the model goes on, to report the reserve).
void CachingAllocatorModel::make_room(std::int64_t bytes) {
  if (options_.capacity_bytes <= 0 || reserved_ + bytes <= options_.capacity_bytes) return;
  release_cache();
  if (reserved_ + bytes > options_.capacity_bytes) out_of_memory_ = true;
}

// release_cached_blocks: every segment that is one free block; an expandable segment gives
// back the whole pages of its free block at its end.
void CachingAllocatorModel::release_cache() {
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    Segment& seg = segments_[s];
    Block& last = blocks_[static_cast<std::size_t>(seg.last)];
    if (seg.released || last.allocated) continue;
    const bool expandable = expandable_[seg.small ? 1 : 0] == static_cast<int>(s);
    const std::int64_t page = ca::expandable_page(seg.small);
    const std::int64_t freed = expandable ? last.size / page * page : (last.prev < 0 ? last.size : 0);
    if (freed == 0) continue;
    pool_of(seg.small).erase({last.size, seg.last});
    last.size -= freed;
    seg.size -= freed;
    reserved_ -= freed;
    if (last.size > 0) {
      pool_of(seg.small).insert({last.size, seg.last});
    } else if (last.prev >= 0) {  // the segment's end page went with its tail block
      blocks_[static_cast<std::size_t>(last.prev)].next = -1;
      last.live = false;
      seg.last = last.prev;
    } else {
      last.live = false;
      seg.released = true;
      if (expandable) expandable_[seg.small ? 1 : 0] = -1;
    }
  }
}

int CachingAllocatorModel::new_segment(bool small, std::int64_t bytes) {
  make_room(bytes);
  count_reserve(bytes);
  segments_.push_back({small, bytes, static_cast<int>(blocks_.size()), false});
  blocks_.push_back({static_cast<int>(segments_.size()) - 1, bytes, false, true, -1, -1});
  return static_cast<int>(blocks_.size()) - 1;
}

// The free bytes at the end of the pool's expandable segment (0: none, or no segment yet).
std::int64_t CachingAllocatorModel::expandable_tail_free(bool small) const {
  const int seg_index = expandable_[small ? 1 : 0];
  if (seg_index < 0) return 0;
  const Block& tail = blocks_[static_cast<std::size_t>(segments_[static_cast<std::size_t>(seg_index)].last)];
  return tail.allocated ? 0 : tail.size;
}

// An expandable segment maps whole pages at its end: enough for `block` beyond a free block
// already there, which the new pages join.
int CachingAllocatorModel::grow_expandable(bool small, std::int64_t block) {
  const std::int64_t page = ca::expandable_page(small);
  make_room(ca::round_up(block - expandable_tail_free(small), page));
  const int seg_index = expandable_[small ? 1 : 0];
  if (seg_index < 0) {  // the pool's first reserve (or its segment went back whole)
    const int index = new_segment(small, ca::round_up(block, page));
    expandable_[small ? 1 : 0] = blocks_[static_cast<std::size_t>(index)].segment;
    return index;
  }
  const std::int64_t have = expandable_tail_free(small);
  const std::int64_t grow = ca::round_up(block - have, page);
  count_reserve(grow);
  Segment& seg = segments_[static_cast<std::size_t>(seg_index)];
  seg.size += grow;
  const int tail = seg.last;
  if (have > 0) {
    pool_of(small).erase({have, tail});
    blocks_[static_cast<std::size_t>(tail)].size += grow;
    return tail;
  }
  blocks_.push_back({seg_index, grow, false, true, tail, -1});
  const int index = static_cast<int>(blocks_.size()) - 1;
  blocks_[static_cast<std::size_t>(tail)].next = index;
  segments_[static_cast<std::size_t>(seg_index)].last = index;
  return index;
}

int CachingAllocatorModel::reserve(bool small, std::int64_t block) {
  if (options_.expandable_segments) return grow_expandable(small, block);
  return new_segment(small, ca::segment_size(block));
}

// The rest of a taken block beyond `block` bytes stays cached as a block of its own.
void CachingAllocatorModel::split(int index, std::int64_t block) {
  Block& b = blocks_[static_cast<std::size_t>(index)];
  const Block rest{b.segment, b.size - block, false, true, index, b.next};
  b.size = block;
  blocks_.push_back(rest);
  const int rest_index = static_cast<int>(blocks_.size()) - 1;
  Block& taken = blocks_[static_cast<std::size_t>(index)];
  if (taken.next >= 0) blocks_[static_cast<std::size_t>(taken.next)].prev = rest_index;
  taken.next = rest_index;
  Segment& seg = segments_[static_cast<std::size_t>(taken.segment)];
  if (seg.last == index) seg.last = rest_index;
  pool_of(seg.small).insert({blocks_[static_cast<std::size_t>(rest_index)].size, rest_index});
}

CachingAllocatorModel::Handle CachingAllocatorModel::allocate(std::int64_t bytes) {
  if (bytes < 0) throw std::invalid_argument("CachingAllocatorModel::allocate: negative size");
  const std::int64_t block = ca::block_size(bytes);
  const bool small = ca::small_pool(block);
  int index = take_free_block(small, block);
  if (index < 0) index = reserve(small, block);
  if (ca::splits(blocks_[static_cast<std::size_t>(index)].size, block)) split(index, block);
  Block& b = blocks_[static_cast<std::size_t>(index)];
  b.allocated = true;
  allocated_ += b.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return index;
}

// `other`, a free neighbour out of the pool, and `block` become one block; returns its index
// (the one at the lower address).
int CachingAllocatorModel::merge(int block, int other) {
  const bool other_first = blocks_[static_cast<std::size_t>(other)].next == block;
  const int first = other_first ? other : block, second = other_first ? block : other;
  Block& a = blocks_[static_cast<std::size_t>(first)];
  const Block& b = blocks_[static_cast<std::size_t>(second)];
  a.size += b.size;
  a.next = b.next;
  if (b.next >= 0) blocks_[static_cast<std::size_t>(b.next)].prev = first;
  blocks_[static_cast<std::size_t>(second)].live = false;
  Segment& seg = segments_[static_cast<std::size_t>(a.segment)];
  if (seg.last == second) seg.last = first;
  return first;
}

void CachingAllocatorModel::free(Handle handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size() ||
      !blocks_[static_cast<std::size_t>(handle)].allocated || !blocks_[static_cast<std::size_t>(handle)].live)
    throw std::invalid_argument("CachingAllocatorModel::free: not an allocated block");
  Block& b = blocks_[static_cast<std::size_t>(handle)];
  b.allocated = false;
  allocated_ -= b.size;
  const bool small = segments_[static_cast<std::size_t>(b.segment)].small;
  int index = handle;
  for (const bool before : {true, false}) {  // try_merge_blocks with each neighbour
    const int other = before ? blocks_[static_cast<std::size_t>(index)].prev : blocks_[static_cast<std::size_t>(index)].next;
    if (other < 0 || blocks_[static_cast<std::size_t>(other)].allocated) continue;
    pool_of(small).erase({blocks_[static_cast<std::size_t>(other)].size, other});
    index = merge(index, other);
  }
  pool_of(small).insert({blocks_[static_cast<std::size_t>(index)].size, index});
}

}  // namespace twinsim
