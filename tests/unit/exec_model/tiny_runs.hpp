#pragma once
// A tiny-gpt training run on one rank for the executor's single-process tests (train_state_test,
// train_config_test): its TrainConfig, and the model allocator installed for a test's lifetime.
#include <memory>

#include "exec/runtime/backend.hpp"
#include "exec/train/train_config.hpp"
#include "scenario/load.hpp"

namespace twinsim::exec::test {

inline TrainConfig tiny_gpt_run(int zero, Dtype precision, Optimizer optimizer) {
  TrainConfig c;
  c.model = catalog_model("tiny-gpt");
  c.plan.zero = zero;
  c.training.seq_len = 16;
  c.training.global_batch = 2;
  c.training.micro_batch = 1;
  c.training.precision = precision;
  c.training.optimizer = optimizer;
  return c;
}

// Installs an allocator for the model for the test's lifetime: the current backend's device
// memory (host memory on the CPU backend; the strict backend's arena under cpu-strict).
struct AllocatorScope {
  std::unique_ptr<Allocator> owned = current_backend().make_device_allocator(0);
  Allocator& allocator = *owned;
  AllocatorScope() { set_model_allocator(&allocator); }
  ~AllocatorScope() { set_model_allocator(nullptr); }
};

}  // namespace twinsim::exec::test
