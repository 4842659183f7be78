#pragma once
// Every executor allocation goes through a TrackedAllocator and carries one of the
// memory categories of the report (SCENARIO.md, memory.breakdown). The allocator keeps
// current and peak bytes per category and the peak of the total, with the categories'
// values at that moment, so the measured breakdown sums to the measured peak as the
// predicted one does. It counts only what it hands out: the kernels' stack and the MPI
// library's internal buffers are not seen.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "exec/runtime/mem_category.hpp"

namespace twinsim::exec {

using CategoryBytes = std::array<std::int64_t, kMemCategoryCount>;

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

class TrackedAllocator {
 public:
  // capacity_bytes 0 = no limit; otherwise the total live bytes may not exceed it
  // (emulates a GPU's memory on the CPU, so "does it fit" fails the same way).
  explicit TrackedAllocator(std::int64_t capacity_bytes = 0) : capacity_(capacity_bytes) {}
  TrackedAllocator(const TrackedAllocator&) = delete;
  TrackedAllocator& operator=(const TrackedAllocator&) = delete;

  // 64-byte aligned, zero-filled; `name` only appears in error messages.
  void* allocate(std::size_t bytes, MemCategory category, std::string_view name = {});
  // `bytes` and `category` must be those given to allocate().
  void deallocate(void* p, std::size_t bytes, MemCategory category) noexcept;

  const MemoryStats& stats() const { return stats_; }
  std::int64_t capacity_bytes() const { return capacity_; }
  void set_capacity_bytes(std::int64_t bytes) { capacity_ = bytes; }
  // Starts a new peak window (e.g. per step) from the bytes live now.
  void reset_peaks();

 private:
  std::int64_t capacity_;
  MemoryStats stats_;
};

// The process's allocator (one rank = one simulated GPU), for code that has no allocator
// at hand, such as the model's fp32 Buffer; set its capacity with set_capacity_bytes.
TrackedAllocator& process_allocator();

}  // namespace twinsim::exec
