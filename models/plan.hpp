#pragma once
// How a model is split over GPUs: the `plan` section of a scenario (SCENARIO.md).
#include <cstdint>
#include <string_view>
#include <vector>

namespace twinsim {

enum class Recompute { none, selective, full };
enum class Schedule { gpipe, one_f_one_b, interleaved };

struct Plan {
  int tp = 1;
  int pp = 1;
  int dp = 1;  // after loading, always resolved (the scenario may leave it out)
  int cp = 1;
  int ep = 1;
  bool sequence_parallel = false;
  int zero = 0;
  Recompute recompute = Recompute::none;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  std::vector<int> stage_layers;  // resolved: always pp entries after loading
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  // flash-style attention never stores the s x s scores (Dao et al. 2022); an
  // extension of SCENARIO.md, default on as in current Megatron-core/TE runs
  bool flash_attention = true;
  // ZeRO-Offload (Ren et al. 2021): Adam's fp32 weights and moments live in CPU memory and
  // the CPU runs the update; the GPU sends its gradient shard and gets the 16-bit weights back
  bool offload_optimizer = false;
  // ZeRO++ (Wang et al. 2023; DeepSpeed's zero_quantized_weights / zero_quantized_gradients):
  // ZeRO-3's per-layer parameter all-gathers in block-quantised int8 (qwZ) and its gradient
  // reduce-scatters in block-quantised int4 (qgZ), priced in sim/training/zero_comm
  bool zero_quantized_weights = false;
  bool zero_quantized_gradients = false;

  std::int64_t world_size() const {
    return static_cast<std::int64_t>(tp) * pp * cp * dp;
  }
};

std::string_view to_string(Recompute r);
std::string_view to_string(Schedule s);
bool parse_recompute(std::string_view name, Recompute& out);
bool parse_schedule(std::string_view name, Schedule& out);

}  // namespace twinsim
