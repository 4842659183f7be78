#pragma once
// The executor's memory interface: every allocation carries one of the memory categories of
// the report (SCENARIO.md, memory.breakdown), and an Allocator keeps current and peak bytes
// per category and the peak of the total, with the categories' values at that moment, so the
// measured breakdown sums to the measured peak as the predicted one does. It counts only
// what it hands out.
//
// The accounting and the block cache live here, once; where the blocks come from is the
// backend's (exec/runtime/backend.hpp): host memory (TrackedAllocator), the strict-device
// backend's protected arena, cudaMalloc. Like PyTorch's CUDA caching allocator, a freed
// block is kept and handed out again to the next request of the same rounded size, so a
// training step that repeats the last one's allocations neither returns memory to the
// system nor faults it in again; the statistics count what is handed out ("allocated"),
// not what is cached ("reserved"). A block is zero-filled unless the caller asks for an
// uninitialized one (torch.empty), which an op whose kernel writes every element of its
// output does.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exec/runtime/mem_category.hpp"
#include "models/report_memory.hpp"

namespace twinsim::exec {

using twinsim::CategoryBytes;  // by MemCategory (models/report_memory.hpp)

struct MemoryStats {
  CategoryBytes current{};        // live bytes now
  CategoryBytes peak{};           // each category's own peak
  std::int64_t total_current = 0;
  std::int64_t total_peak = 0;    // peak of the sum (not the sum of the peaks)
  CategoryBytes at_total_peak{};  // the categories when total_peak was reached; sums to it
  std::int64_t allocations = 0;   // count of allocate() calls that succeeded

  std::int64_t current_of(MemCategory c) const { return current[static_cast<std::size_t>(c)]; }
  std::int64_t peak_of(MemCategory c) const { return peak[static_cast<std::size_t>(c)]; }
  std::int64_t at_total_peak_of(MemCategory c) const {
    return at_total_peak[static_cast<std::size_t>(c)];
  }
};

// An allocation that the system refused or that would exceed the configured capacity.
class AllocationError : public std::runtime_error {
 public:
  AllocationError(MemCategory category, std::string_view name, std::int64_t requested_bytes,
                  std::int64_t current_bytes, std::int64_t capacity_bytes);
  MemCategory category() const { return category_; }
  std::int64_t requested_bytes() const { return requested_; }

 private:
  MemCategory category_;
  std::int64_t requested_;
};

// What a new block holds: zeros, or whatever its last user left (an op's output that
// its kernel writes in full).
enum class Fill { zeros, uninitialized };

class Allocator {
 public:
  // capacity_bytes 0 = no limit; otherwise the total live bytes may not exceed it
  // (emulates a GPU's memory on the CPU, so "does it fit" fails the same way).
  explicit Allocator(std::int64_t capacity_bytes = 0);
  // A derived allocator's destructor calls release_cache(): the blocks are its own.
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // 64-byte aligned; `name` only appears in error messages.
  void* allocate(std::size_t bytes, MemCategory category, std::string_view name = {}, Fill fill = Fill::zeros);
  // `bytes` and `category` must be those given to allocate(). The block stays cached.
  void deallocate(void* p, std::size_t bytes, MemCategory category) noexcept;
  // Returns the cached blocks to the system (also done when the system refuses a block).
  void release_cache() noexcept;
  std::int64_t cached_bytes() const { return cached_bytes_; }
  // Fills uninitialized blocks with NaN (all bits set), so that a kernel that reads
  // before it writes shows in the results; on by default when the environment has
  // TWINSIM_POISON_UNINITIALIZED=1 (scripts/test.sh sets it).
  void set_poison_uninitialized(bool on) { poison_ = on; }

  const MemoryStats& stats() const { return stats_; }
  std::int64_t capacity_bytes() const { return capacity_; }
  void set_capacity_bytes(std::int64_t bytes) { capacity_ = bytes; }
  // Starts a new peak window (e.g. per step) from the bytes live now.
  void reset_peaks();

 protected:
  // A new block of `bytes` (a multiple of 64), 64-byte aligned; nullptr when the system
  // refuses it.
  virtual void* reserve_block(std::size_t bytes) = 0;
  // Gives a block of reserve_block back to the system.
  virtual void release_block(void* p, std::size_t bytes) noexcept = 0;
  // Sets `bytes` bytes of a block to `value` (device memory: the backend's own memset).
  virtual void fill_block(void* p, std::size_t bytes, unsigned char value) = 0;

 private:
  void* take_cached(std::size_t rounded);

  std::int64_t capacity_;
  MemoryStats stats_;
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // free blocks by rounded size
  std::int64_t cached_bytes_ = 0;
  bool poison_ = false;
};

}  // namespace twinsim::exec
