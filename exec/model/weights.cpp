#include "exec/model/weights.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/runtime/backend.hpp"

namespace twinsim::exec {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator with the same stream on every
// platform, unlike std::normal_distribution whose algorithm is implementation-defined.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
};

// FNV-1a 64-bit hash of the parameter name (Fowler, Noll, Vo).
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

int shard_ways(const ParamSpec& spec, int tp) { return spec.shard_ways > 0 ? spec.shard_ways : tp; }

std::int64_t shard_count(const ParamSpec& s, int tp) {
  const std::int64_t n = s.rows * s.cols;
  return s.shard == Shard::none ? n : n / shard_ways(s, tp);
}

std::vector<std::int64_t> full_shape(const ParamSpec& spec) {
  if (spec.rows == 1) return {spec.cols};
  return {spec.rows, spec.cols};
}

std::vector<float> full_initial_value(const ParamSpec& spec, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(spec.rows * spec.cols));
  if (spec.init == Init::zeros) return v;
  if (spec.init == Init::ones) {
    std::fill(v.begin(), v.end(), 1.0f);
    return v;
  }
  SplitMix64 rng{seed ^ fnv1a(spec.name)};
  const double two_pi = 6.283185307179586;
  for (std::size_t i = 0; i < v.size(); i += 2) {
    // Box-Muller transform: two independent N(0,1) from two uniforms (Box & Muller 1958)
    const double r = std::sqrt(-2.0 * std::log(rng.uniform()));
    const double a = two_pi * rng.uniform();
    v[i] = static_cast<float>(spec.std * r * std::cos(a));
    if (i + 1 < v.size()) v[i + 1] = static_cast<float>(spec.std * r * std::sin(a));
  }
  return v;
}

std::vector<float> take_shard(const std::vector<float>& full, const ParamSpec& spec, int tp, int tp_rank) {
  if (spec.shard == Shard::none) return full;
  tp_rank %= shard_ways(spec, tp);
  tp = shard_ways(spec, tp);
  std::vector<float> out(static_cast<std::size_t>(shard_count(spec, tp)));
  if (spec.shard == Shard::rows) {
    const std::int64_t rows = spec.rows / tp;
    std::copy_n(full.begin() + tp_rank * rows * spec.cols, rows * spec.cols, out.begin());
  } else {
    const std::int64_t cols = spec.cols / tp;
    for (std::int64_t r = 0; r < spec.rows; ++r)
      std::copy_n(full.begin() + r * spec.cols + tp_rank * cols, cols, out.begin() + r * cols);
  }
  return out;
}

void put_shard(const float* shard, const ParamSpec& spec, int tp, int tp_rank, std::vector<float>& full) {
  if (spec.shard != Shard::none) {
    tp_rank %= shard_ways(spec, tp);
    tp = shard_ways(spec, tp);
  }
  if (spec.shard == Shard::none) {
    if (tp_rank == 0) std::copy_n(shard, spec.rows * spec.cols, full.begin());
  } else if (spec.shard == Shard::rows) {
    const std::int64_t rows = spec.rows / tp;
    std::copy_n(shard, rows * spec.cols, full.begin() + tp_rank * rows * spec.cols);
  } else {
    const std::int64_t cols = spec.cols / tp;
    for (std::int64_t r = 0; r < spec.rows; ++r)
      std::copy_n(shard + r * cols, cols, full.begin() + r * spec.cols + tp_rank * cols);
  }
}

namespace {

std::size_t padded(std::size_t n, int multiple) {
  const std::size_t m = static_cast<std::size_t>(std::max(1, multiple));
  return (n + m - 1) / m * m;
}

}  // namespace

namespace {

// Trainable specs first, then the frozen ones (training.lora's base), each part padded to
// `pad_multiple`: the gradient buffer is the first part alone. No expert segment: the
// executor's LoRA adapts dense layers only (train_config.cpp).
FlatLayout trainable_first_layout(const std::vector<ParamSpec>& specs, int tp, int pad_multiple) {
  FlatLayout l;
  l.offsets.resize(specs.size());
  std::size_t at = 0;
  for (bool trainable : {true, false}) {
    for (std::size_t i = 0; i < specs.size(); ++i) {
      if (specs[i].trainable != trainable) continue;
      if (specs[i].expert) throw std::invalid_argument(specs[i].name + ": a frozen model's expert matrix");
      const auto n = static_cast<std::size_t>(shard_count(specs[i], tp));
      l.offsets[i] = at;
      at += n;
      l.used += n;
    }
    at = padded(at, pad_multiple);
    if (trainable) l.grads = at;
  }
  l.flat = l.experts_begin = at;
  return l;
}

}  // namespace

FlatLayout flat_layout(const std::vector<ParamSpec>& specs, int tp, int pad_multiple, int expert_pad_multiple) {
  if (std::any_of(specs.begin(), specs.end(), [](const ParamSpec& s) { return !s.trainable; }))
    return trainable_first_layout(specs, tp, pad_multiple);
  FlatLayout l;
  l.offsets.resize(specs.size());
  const bool segment = expert_pad_multiple > 0;
  std::size_t at = 0, experts = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto n = static_cast<std::size_t>(shard_count(specs[i], tp));
    l.used += n;
    if (segment && specs[i].expert) {
      l.offsets[i] = experts;  // within the expert segment for now
      experts += n;
    } else {
      l.offsets[i] = at;
      at += n;
    }
  }
  if (!segment || experts == 0) {
    l.flat = l.experts_begin = l.grads = padded(at, pad_multiple);
    return l;
  }
  l.experts_begin = padded(at, pad_multiple);
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].expert) l.offsets[i] += l.experts_begin;
  l.flat = l.grads = l.experts_begin + padded(experts, expert_pad_multiple);
  return l;
}

ParamBlock::ParamBlock(std::string name, std::vector<ParamSpec> specs, int tp, int tp_rank, int pad_multiple,
                       Dtype storage, int expert_pad_multiple)
    : name_(std::move(name)), tp_(tp), tp_rank_(tp_rank), storage_(storage) {
  for (const ParamSpec& s : specs) {
    const int ways = shard_ways(s, tp);
    if (tp % ways != 0)
      throw std::invalid_argument(s.name + ": split " + std::to_string(ways) + " ways, not a divisor of tp");
    if (s.shard == Shard::rows && s.rows % ways != 0)
      throw std::invalid_argument(s.name + ": rows not divisible by tp");
    if (s.shard == Shard::cols && s.cols % ways != 0)
      throw std::invalid_argument(s.name + ": cols not divisible by tp");
  }
  const FlatLayout layout = flat_layout(specs, tp, pad_multiple, expert_pad_multiple);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    ParamSlot slot;
    slot.count = static_cast<std::size_t>(shard_count(specs[i], tp));
    slot.offset = layout.offsets[i];
    slot.spec = std::move(specs[i]);
    slots_.push_back(std::move(slot));
  }
  used_size_ = layout.used;
  experts_begin_ = layout.experts_begin;
  grad_size_ = layout.grads;
  flat_size_ = layout.flat;
  params = Tensor(MemCategory::params, flat_size_, storage_);
  grads = Tensor(MemCategory::grads, grad_size_, storage_);
}

void ParamBlock::initialize(std::uint64_t seed) {
  for (const ParamSlot& slot : slots_) {
    const std::vector<float> shard = take_shard(full_initial_value(slot.spec, seed), slot.spec, tp_, tp_rank_);
    with_storage(storage_, [&]<class T>() {  // drawn on the host, copied to the device
      std::vector<T> stored(shard.size());
      for (std::size_t i = 0; i < shard.size(); ++i) stored[i] = kernels::from_float<T>(shard[i]);
      current_backend().copy_to_device(params.as<T>() + slot.offset, stored.data(), stored.size() * sizeof(T));
    });
  }
}

int ParamBlock::index_of(const std::string& param_name) const {
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].spec.name == param_name) return static_cast<int>(i);
  throw std::out_of_range("block " + name_ + " has no parameter " + param_name);
}

}  // namespace twinsim::exec
