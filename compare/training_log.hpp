#pragma once
// A training framework's log read for what it says of each step: Megatron-LM / NeMo
// ("elapsed time per iteration (ms): 5444.9 | throughput per GPU (TFLOP/s/GPU): 239.8", the
// "memory (MB) | ... | max allocated: M" report; NeMo 2's "train_step_timing in s: 1.39"),
// torchtitan ("step: 5  loss: ...  memory: 66.91GiB(37.51%)  tps: 10,007  tflops: 313.36  mfu:
// 13.93%") and DeepSpeed ("SamplesPerSec=83.49, ... MaxMemAllocated=9.02GB", or
// "CurrSamplesPerSec=..."). Figures of the first logged step are dropped (warm-up) when later
// ones exist; each figure is the median of the rest.
#include <optional>
#include <string>
#include <vector>

namespace twinsim::compare {

enum class LogFormat { megatron, torchtitan, deepspeed };

struct LogRun {
  LogFormat format = LogFormat::megatron;
  int steps = 0;                                  // step lines read
  std::optional<double> step_s;                   // Megatron / NeMo: the iteration time
  std::optional<double> tokens_per_s_per_gpu;     // torchtitan's tps
  std::optional<double> tflops_per_gpu;           // Megatron's or torchtitan's (their own FLOP counts)
  std::optional<double> mfu;                      // torchtitan's
  std::optional<double> samples_per_s;            // DeepSpeed's, over the whole job
  std::optional<double> peak_bytes;               // max allocated (Megatron, DeepSpeed) or torchtitan's memory
};

// Throws std::invalid_argument naming `origin` when no line of a known format is found.
LogRun read_training_log(const std::string& text, const std::string& origin);

const char* format_name(LogFormat f);

// The median of a series less its first value (a warm-up), or of the one value; none when
// empty. A log's per-step figures; a trace op's calls (compare/rank_balance.hpp).
std::optional<double> median_after_warmup(std::vector<double> v);

}  // namespace twinsim::compare
