#pragma once
// A fixed-size, direct-mapped cache of values keyed by a plan's knobs (every row of
// models/plan_fields.hpp but the stage list, which a searched plan leaves empty): the plan
// search's closed form prices what depends on the plan alone once, not once a candidate
// (the micro-batch is no part of the key). Lookups and refills do not allocate; a key that
// lands on a filled slot replaces what it held.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "models/plan_fields.hpp"

namespace twinsim {

namespace knob_cache_detail {
template <class Knob>
inline constexpr bool kOnKnobs = !std::is_same_v<Knob, LayerListKnob>;  // stage_layers lives on Plan

template <class V>
std::uint64_t bits(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::bit_cast<std::uint64_t>(static_cast<double>(v));
  else return static_cast<std::uint64_t>(v);
}
}  // namespace knob_cache_detail

// Whether two plans' knobs are all equal (the stage list aside).
inline bool same_knobs(const PlanKnobs& a, const PlanKnobs& b) {
  bool same = true;
  for_each_plan_knob([&](const auto& knob) {
    if constexpr (knob_cache_detail::kOnKnobs<std::decay_t<decltype(knob)>>)
      same = same && a.*knob.member == b.*knob.member;
  });
  return same;
}

// FNV-1a over the knobs' values, one 64-bit word each (the stage list aside).
inline std::uint64_t knobs_hash(const PlanKnobs& k) {
  std::uint64_t h = 14695981039346656037ull;
  for_each_plan_knob([&](const auto& knob) {
    if constexpr (knob_cache_detail::kOnKnobs<std::decay_t<decltype(knob)>>)
      h = (h ^ knob_cache_detail::bits(k.*knob.member)) * 1099511628211ull;
  });
  return h;
}

template <class Value>
class KnobCache {
 public:
  explicit KnobCache(std::size_t slots) : slots_(slots) {}

  // The value for these knobs; fill() computes it where the slot holds another key.
  template <class Fill>
  const Value& get(const PlanKnobs& key, Fill&& fill) {
    Slot& s = slots_[knobs_hash(key) % slots_.size()];
    if (!s.filled || !same_knobs(s.key, key)) {
      s.value = fill();
      s.key = key, s.filled = true;
      ++fills_;
    }
    return s.value;
  }
  std::size_t fills() const { return fills_; }

 private:
  struct Slot {
    PlanKnobs key;
    Value value{};
    bool filled = false;
  };
  std::vector<Slot> slots_;
  std::size_t fills_ = 0;
};

}  // namespace twinsim
