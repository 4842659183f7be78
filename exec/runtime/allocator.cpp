#include "exec/runtime/allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace twinsim::exec {

namespace {

// A cache line: what GPU allocators round to at the least (PyTorch's caching allocator
// rounds to 512 bytes); enough here for aligned SIMD loads.
constexpr std::size_t kAlignment = 64;

std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

std::string allocation_message(MemCategory category, std::string_view name, std::int64_t requested,
                               std::int64_t current, std::int64_t capacity) {
  std::string m = "cannot allocate " + std::to_string(requested) + " bytes for " +
                  std::string(category_name(category));
  if (!name.empty()) m += " tensor '" + std::string(name) + "'";
  m += ": " + std::to_string(current) + " bytes already live";
  if (capacity > 0)
    m += ", capacity " + std::to_string(capacity) + " bytes (exceeded by " +
         std::to_string(current + requested - capacity) + ")";
  else
    m += ", the system refused the allocation";
  return m;
}

bool poison_from_environment() {
  const char* v = std::getenv("TWINSIM_POISON_UNINITIALIZED");
  return v != nullptr && std::string_view(v) == "1";
}

}  // namespace

AllocationError::AllocationError(MemCategory category, std::string_view name,
                                 std::int64_t requested_bytes, std::int64_t current_bytes,
                                 std::int64_t capacity_bytes)
    : std::runtime_error(allocation_message(category, name, requested_bytes, current_bytes,
                                            capacity_bytes)),
      category_(category),
      requested_(requested_bytes) {}

Allocator::Allocator(std::int64_t capacity_bytes)
    : capacity_(capacity_bytes), poison_(poison_from_environment()) {}

void* Allocator::take_cached(std::size_t rounded) {
  auto it = cache_.find(rounded);
  if (it == cache_.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  cached_bytes_ -= static_cast<std::int64_t>(rounded);
  return p;
}

void* Allocator::allocate(std::size_t bytes, MemCategory category, std::string_view name, Fill fill) {
  const auto requested = static_cast<std::int64_t>(bytes);
  if (capacity_ > 0 && stats_.total_current + requested > capacity_)
    throw AllocationError(category, name, requested, stats_.total_current, capacity_);
  void* p = nullptr;
  if (bytes > 0) {
    const std::size_t rounded = round_up(bytes);
    p = take_cached(rounded);
    if (p == nullptr) p = reserve_block(rounded);
    if (p == nullptr) {  // as PyTorch does on a failed cudaMalloc: free the cache, try once more
      release_cache();
      p = reserve_block(rounded);
    }
    if (p == nullptr) throw AllocationError(category, name, requested, stats_.total_current, 0);
    if (fill == Fill::zeros) fill_block(p, bytes, 0);
    else if (poison_) fill_block(p, bytes, 0xff);  // all bits set: a NaN in fp32 and bf16
  }

  const auto c = static_cast<std::size_t>(category);
  stats_.current[c] += requested;
  stats_.total_current += requested;
  stats_.allocations += 1;
  if (stats_.current[c] > stats_.peak[c]) stats_.peak[c] = stats_.current[c];
  if (stats_.total_current > stats_.total_peak) {
    stats_.total_peak = stats_.total_current;
    stats_.at_total_peak = stats_.current;
  }
  return p;
}

void Allocator::deallocate(void* p, std::size_t bytes, MemCategory category) noexcept {
  if (p != nullptr) {
    const std::size_t rounded = round_up(bytes);
    try {
      cache_[rounded].push_back(p);
      cached_bytes_ += static_cast<std::int64_t>(rounded);
    } catch (...) {  // no room to remember it: give it back
      release_block(p, rounded);
    }
  }
  const auto c = static_cast<std::size_t>(category);
  stats_.current[c] -= static_cast<std::int64_t>(bytes);
  stats_.total_current -= static_cast<std::int64_t>(bytes);
}

void Allocator::release_cache() noexcept {
  for (auto& [size, blocks] : cache_)
    for (void* p : blocks) release_block(p, size);
  cache_.clear();
  cached_bytes_ = 0;
}

void Allocator::reset_peaks() {
  stats_.peak = stats_.current;
  stats_.total_peak = stats_.total_current;
  stats_.at_total_peak = stats_.current;
}

}  // namespace twinsim::exec
