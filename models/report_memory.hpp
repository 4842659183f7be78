#pragma once
// The report's "memory" section (docs/SCENARIO.md, "memory"), one struct for both sides of
// the comparison: the simulator's prediction (sim/memory/memory_report) and the executor's
// measurement (exec/train/run_report) are written through it, and the comparison (compare/)
// and the text report read them back through it, so its keys live in this file only.
// Bytes throughout, per GPU.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/memory_category.hpp"

namespace twinsim {

// Bytes per report category, indexed by MemCategory.
using CategoryBytes = std::array<std::int64_t, kMemCategoryCount>;

struct StagePeak {  // the worst GPU of one pipeline stage
  int stage = 0;
  std::int64_t peak_bytes = 0;
  CategoryBytes breakdown{};
  std::optional<std::int64_t> host_bytes;  // predicted: its offloaded state in CPU memory
};

struct RankPeak {  // measured: one rank's peak and each category's own peak
  int rank = 0;
  int stage = 0;
  std::int64_t peak_bytes = 0;
  CategoryBytes category_peaks{};
};

struct MemorySection {
  std::int64_t capacity_bytes = 0;  // the GPU's memory
  std::int64_t peak_bytes = 0;      // of the worst GPU
  bool fits = false;
  CategoryBytes breakdown{};        // that GPU's categories at its peak
  std::vector<StagePeak> stages;    // one per pipeline stage
  std::int64_t host_bytes = 0;      // the most CPU memory one GPU's offloaded state takes
  std::optional<std::int64_t> host_capacity_bytes;  // predicted: this GPU's share of the node's
  std::optional<CategoryBytes> host_breakdown;      // measured: the host allocator's categories
  // predicted, with plan.offload_device: nvme: the most one GPU's offloaded state takes on the
  // node's NVMe drives, by category, and this GPU's share of the drives (when described)
  std::optional<std::int64_t> nvme_bytes;
  std::optional<CategoryBytes> nvme_breakdown;
  std::optional<std::int64_t> nvme_capacity_bytes;
  std::vector<RankPeak> per_rank;                   // measured: every rank
  // predicted, training: the caching allocator's reserve at the worst GPU's peak
  // (torch.cuda.max_memory_reserved) and the device memory outside the allocator (CUDA
  // context, NCCL's buffers); sim/memory/reserved_memory
  std::optional<std::int64_t> reserved_peak_bytes;
  std::optional<std::int64_t> outside_allocator_bytes;
};

nlohmann::json category_json(const CategoryBytes& bytes);
nlohmann::json to_json(const MemorySection& m);

// Reads a report's "memory" object; `side` names the report in errors ("simulated",
// "measured"). peak_bytes and breakdown are required (std::invalid_argument naming the key);
// a category missing from a breakdown is 0 (an older report).
MemorySection read_memory_section(const nlohmann::json& memory, const std::string& side);

}  // namespace twinsim
