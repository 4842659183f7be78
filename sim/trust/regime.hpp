#pragma once
// The regime of a prediction: what kind of run it is, along the dimensions on which the
// simulator's error is known to differ (issue 55): training or serving, the GPU family, the
// software stack, dense or MoE, the parallelism kinds and the scale. Validation cases and the
// scenario being predicted are both described this way, so a prediction is judged by the
// held-out error of the cases most like it.
#include <array>
#include <string>

#include "scenario/scenario.hpp"

namespace twinsim::trust {

enum class Dim { workload, gpu, stack, model, parallelism, scale };
inline constexpr std::size_t kDims = 6;
inline constexpr std::array<const char*, kDims> kDimNames = {"workload", "gpu", "stack",
                                                             "model", "parallelism", "scale"};

struct Regime {
  std::array<std::string, kDims> values;  // indexed by Dim
  const std::string& operator[](Dim d) const { return values[static_cast<std::size_t>(d)]; }
  std::string& operator[](Dim d) { return values[static_cast<std::size_t>(d)]; }
  // "training h100 megatron-core dense tp+pp+dp 9-512"
  std::string describe() const;
};

// The scenario's regime: workload "training" or "serving"; gpu the catalog name's family
// ("h100-sxm" -> "h100"); stack the preset's name; model "dense" or "moe"; parallelism the
// kinds above 1 joined by '+' ("tp+pp+dp", "zero3" for ZeRO stage 3 over dp, "single");
// scale a bucket of the GPU count (scale_bucket).
Regime regime_of(const Scenario& s);

// "1", "2-8" (one node), "9-512", "513-4096", ">4096".
std::string scale_bucket(long long gpus);

// The GPU family of a catalog GPU name: its first dash-separated word, lower case.
std::string gpu_family(const std::string& gpu_name);

}  // namespace twinsim::trust
