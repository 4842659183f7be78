#pragma once
// The memory prediction of a scenario: per GPU, per pipeline stage, in the report
// categories of SCENARIO.md ("memory" object). Bytes throughout.
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/memory_category.hpp"
#include "models/report_memory.hpp"
#include "scenario/scenario.hpp"

namespace twinsim {

struct MemoryBreakdown {
  std::int64_t params = 0;
  std::int64_t grads = 0;
  std::int64_t optimizer = 0;
  std::int64_t activations = 0;
  std::int64_t kv_cache = 0;
  std::int64_t buffers = 0;
  std::int64_t total() const { return params + grads + optimizer + activations + kv_cache + buffers; }
  // the bytes of one report category (models/memory_category.hpp)
  std::int64_t of(MemCategory c) const {
    switch (c) {
      case MemCategory::params: return params;
      case MemCategory::grads: return grads;
      case MemCategory::optimizer: return optimizer;
      case MemCategory::activations: return activations;
      case MemCategory::kv_cache: return kv_cache;
      case MemCategory::buffers: return buffers;
    }
    return 0;
  }
};

struct StageMemory {
  int stage = 0;
  std::int64_t peak_bytes = 0;  // == breakdown.total(): everything is live at the peak
  MemoryBreakdown breakdown;
  std::int64_t host_bytes = 0;  // CPU memory this GPU's offloaded state takes (plan.offload_optimizer)
  MemoryBreakdown host;          // ... by category: optimizer, params, activations offloaded
  MemoryBreakdown nvme;          // plan.offload_device: nvme: what lives on the node's drives instead
};

struct MemoryReport {
  std::int64_t capacity_bytes = 0;  // the GPU's HBM
  std::int64_t peak_bytes = 0;      // of the stage with the highest peak
  bool fits = false;                // peak_bytes <= capacity_bytes
  MemoryBreakdown breakdown;        // of that stage
  std::vector<StageMemory> stages;  // one per pipeline stage
  std::int64_t host_bytes = 0;           // the most CPU memory one GPU's offloaded state takes
  MemoryBreakdown host_breakdown;        // that GPU's, by category
  std::int64_t host_capacity_bytes = 0;  // this GPU's share of the node's CPU memory (0: not described)
  std::int64_t nvme_bytes = 0;           // the most one GPU's state takes on the node's NVMe drives
  MemoryBreakdown nvme_breakdown;        // that GPU's, by category
  std::int64_t nvme_capacity_bytes = 0;  // this GPU's share of the drives (0: not described, not checked)
  // training: PyTorch's caching allocator's reserve at the peak stage's peak, and the memory
  // outside it (sim/memory/reserved_memory); fits judges their sum under stack.fits_on_reserved
  std::int64_t reserved_peak_bytes = 0;
  std::int64_t outside_allocator_bytes = 0;
};

// One GPU of each pipeline stage (all GPUs of a stage hold the same amounts).
StageMemory training_stage_memory(const Scenario& scenario, int stage);
StageMemory inference_stage_memory(const Scenario& scenario, int stage);

MemoryReport predict_memory(const Scenario& scenario);

// The "memory" object of the report (SCENARIO.md), written through the contract's
// MemorySection (models/report_memory.hpp).
CategoryBytes category_bytes(const MemoryBreakdown& breakdown);
MemorySection memory_section(const MemoryReport& report);
nlohmann::json to_json(const MemoryReport& report);

}  // namespace twinsim
