#pragma once
// What the GPUs are asked to do: one training step, or serving a batch of requests.
#include <cstdint>
#include <string>
#include <string_view>

#include "models/dtype.hpp"

namespace twinsim {

enum class Optimizer { adam, sgd };

// A flat file of token ids (nanoGPT's / Megatron's .bin: little-endian uint16 or uint32,
// no header) the executor trains on; empty path: its seeded synthetic tokens. The
// simulator prices the same step either way.
struct TokenFile {
  std::string path;
  int token_bytes = 2;  // uint16: 2, uint32: 4
};

struct TrainingWorkload {
  std::int64_t seq_len = 2048;
  std::int64_t global_batch = 1;  // sequences per optimizer step
  std::int64_t micro_batch = 1;   // sequences per forward/backward pass on one replica
  Dtype precision = Dtype::bf16;
  Optimizer optimizer = Optimizer::adam;
  TokenFile data;  // training.data

  // Micro-batches each data-parallel replica runs per step (gradient accumulation).
  std::int64_t micro_batches(int dp) const { return global_batch / (micro_batch * dp); }
};

struct InferenceWorkload {
  std::int64_t prompt_len = 2048;
  std::int64_t output_len = 128;
  std::int64_t batch = 1;  // concurrent sequences
  Dtype weight_dtype = Dtype::bf16;
  Dtype kv_dtype = Dtype::bf16;
};

std::string_view to_string(Optimizer o);
bool parse_optimizer(std::string_view name, Optimizer& out);

}  // namespace twinsim
