#pragma once
// The memory categories of the report (SCENARIO.md, memory.breakdown): one list for the
// simulator's breakdown, the executor's tracked allocations, the comparison and Python
// (twinsim._core.memory_categories), so the measured breakdown lines up with the predicted.
#include <array>
#include <cstddef>
#include <string_view>

namespace twinsim {

enum class MemCategory { params, grads, optimizer, activations, kv_cache, buffers };
inline constexpr std::size_t kMemCategoryCount = 6;
inline constexpr std::array<MemCategory, kMemCategoryCount> kMemCategories = {
    MemCategory::params,      MemCategory::grads,    MemCategory::optimizer,
    MemCategory::activations, MemCategory::kv_cache, MemCategory::buffers};

// The report's key: "params", "grads", ...
inline constexpr std::string_view category_name(MemCategory c) {
  constexpr std::array<std::string_view, kMemCategoryCount> names = {
      "params", "grads", "optimizer", "activations", "kv_cache", "buffers"};
  return names[static_cast<std::size_t>(c)];
}

}  // namespace twinsim
