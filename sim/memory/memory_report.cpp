#include "sim/memory/memory_report.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sim/memory/activations.hpp"
#include "sim/memory/buffers.hpp"
#include "sim/memory/hf_eager_memory.hpp"
#include "sim/memory/inference.hpp"
#include "sim/memory/reserved_memory.hpp"
#include "sim/memory/weights.hpp"

namespace twinsim {

namespace {

StageMemory finish(int stage, const MemoryBreakdown& b) { return {stage, b.total(), b, 0, {}, {}}; }

// What ZeRO-Offload / ZeRO-Infinity keep off the GPU: the states and the parameter shard on
// the host or the drives (the fused stacks' and hf_bf16's alike; hf_eager refuses offload).
void place_offloaded(StageMemory& m, const WeightMemory& w) {
  m.host.optimizer = w.host_optimizer;
  m.host.params = w.host_params;
  m.host_bytes = m.host.total();
  m.nvme.optimizer = w.nvme_optimizer;
  m.nvme.params = w.nvme_params;
}

StageMemory training_stage(const Scenario& sc, const LayerActivations& per_layer, int stage) {
  const TrainingWorkload& t = *sc.training;
  BufferBytes buffers = training_buffers(sc.model, sc.plan, sc.stack, sc.cluster.gpu, t, stage_params(sc.model, sc.plan, stage));
  if (sc.cluster.gpu.workspace_bytes >= 0) buffers.workspace = sc.cluster.gpu.workspace_bytes;
  const WeightMemory w = training_weight_memory(sc.model, sc.plan, sc.stack, sc.cluster.gpu, t, stage);
  if (sc.stack.hf_modeling()) {  // its own memory model and census
    StageMemory m = hf_eager_training_stage(sc.model, sc.plan, t, stage, buffers.total(), sc.stack, sc.cluster.gpu);
    place_offloaded(m, w);
    return m;
  }
  MemoryBreakdown b;
  b.params = w.params;
  b.grads = w.grads;
  b.optimizer = w.optimizer;
  b.activations = training_activation_bytes(sc.model, sc.plan, sc.stack, t, per_layer, stage);
  b.buffers = buffers.total();
  StageMemory m = finish(stage, b);
  m.host.activations = offloaded_activation_bytes(sc.model, sc.plan, per_layer);
  place_offloaded(m, w);
  return m;
}

LayerActivations training_layer_activations(const Scenario& sc) {
  const TrainingWorkload& t = *sc.training;
  return layer_activations(sc.model, sc.plan, training_shape(t, sc.stack));
}

void check(const Scenario& sc) {
  if (sc.plan.pp < 1 || sc.plan.tp < 1 || sc.plan.dp < 1 || sc.plan.cp < 1 || sc.plan.ep < 1)
    throw std::invalid_argument("predict_memory: plan degrees must be >= 1");
  if (sc.is_training() == sc.inference.has_value())
    throw std::invalid_argument("predict_memory: exactly one of training / inference");
}

}  // namespace

StageMemory training_stage_memory(const Scenario& sc, int stage) {
  return training_stage(sc, training_layer_activations(sc), stage);
}

StageMemory inference_stage_memory(const Scenario& sc, int stage) {
  const InferenceWorkload& inf = *sc.inference;
  MemoryBreakdown b;
  b.params = inference_gpu_weight_bytes(sc.model, sc.plan, inf, stage) + draft_weight_bytes(sc.plan, inf);
  b.kv_cache = inference_kv_cache_bytes(sc.model, sc.plan, inf, stage, sc.stack.serving_keeps_window_kv) + draft_kv_cache_bytes(sc.plan, inf);
  b.activations = prefill_activation_bytes(sc.model, sc.plan, inf, stage);
  BufferBytes buffers = inference_buffers(sc.model, sc.plan, inf);
  if (sc.cluster.gpu.workspace_bytes >= 0) buffers.workspace = sc.cluster.gpu.workspace_bytes;
  b.buffers = buffers.total();
  StageMemory m = finish(stage, b);
  // ZeRO-Inference: the weights in CPU memory or on the node's drives (plan.offload_device)
  const std::int64_t offloaded = inference_offloaded_weight_bytes(sc.model, sc.plan, inf, stage);
  (sc.plan.offload_device == OffloadDevice::nvme ? m.nvme : m.host).params = offloaded;
  m.host_bytes = m.host.total();
  return m;
}

MemoryReport predict_memory(const Scenario& sc) {
  check(sc);
  MemoryReport r;
  r.capacity_bytes = sc.cluster.gpu.memory_bytes;
  r.stages.reserve(sc.plan.pp);
  // Layer activations do not depend on the stage: build the layer ops once.
  const LayerActivations per_layer = sc.is_training() ? training_layer_activations(sc) : LayerActivations{};
  for (int stage = 0; stage < sc.plan.pp; ++stage) {
    r.stages.push_back(sc.is_training() ? training_stage(sc, per_layer, stage) : inference_stage_memory(sc, stage));
    if (r.stages.back().peak_bytes > r.peak_bytes || stage == 0) {
      r.peak_bytes = r.stages.back().peak_bytes;
      r.breakdown = r.stages.back().breakdown;
    }
  }
  for (const StageMemory& st : r.stages)
    if (st.host_bytes > r.host_bytes) {
      r.host_bytes = st.host_bytes;
      r.host_breakdown = st.host;
    }
  for (const StageMemory& st : r.stages)
    if (st.nvme.total() > r.nvme_bytes) {
      r.nvme_bytes = st.nvme.total();
      r.nvme_breakdown = st.nvme;
    }
  r.host_capacity_bytes = sc.cluster.host.memory_bytes;
  r.nvme_capacity_bytes = sc.cluster.host.nvme_bytes;
  std::int64_t device_bytes = r.peak_bytes;
  if (sc.is_training()) {  // the stage with the highest allocated peak, as the allocator reserves it
    const auto worst = std::find_if(r.stages.begin(), r.stages.end(),
                                    [&](const StageMemory& st) { return st.peak_bytes == r.peak_bytes; });
    const ReservedMemory reserved = training_reserved_memory(sc, worst->stage, *worst);
    r.reserved_peak_bytes = reserved.reserved_peak;
    r.outside_allocator_bytes = reserved.outside;
    if (sc.stack.fits_on_reserved) device_bytes = reserved.reserved_peak + reserved.outside;
  }
  // offloaded state must fit the GPU's share of the node's CPU memory (and drives) too
  r.fits = device_bytes <= r.capacity_bytes && (r.host_bytes == 0 || r.host_bytes <= r.host_capacity_bytes) &&
           (r.nvme_capacity_bytes == 0 || r.nvme_bytes <= r.nvme_capacity_bytes);
  return r;
}

CategoryBytes category_bytes(const MemoryBreakdown& b) {
  CategoryBytes out{};
  for (MemCategory c : kMemCategories) out[static_cast<std::size_t>(c)] = b.of(c);
  return out;
}

MemorySection memory_section(const MemoryReport& r) {
  MemorySection m;
  m.capacity_bytes = r.capacity_bytes;
  m.peak_bytes = r.peak_bytes;
  m.fits = r.fits;
  m.breakdown = category_bytes(r.breakdown);
  for (const StageMemory& s : r.stages) m.stages.push_back({s.stage, s.peak_bytes, category_bytes(s.breakdown), s.host_bytes});
  m.host_bytes = r.host_bytes;
  m.host_capacity_bytes = r.host_capacity_bytes;
  if (r.host_bytes > 0) m.host_breakdown = category_bytes(r.host_breakdown);  // offloaded state, by category
  if (r.nvme_bytes > 0) {  // plan.offload_device: nvme
    m.nvme_bytes = r.nvme_bytes;
    m.nvme_breakdown = category_bytes(r.nvme_breakdown);
    if (r.nvme_capacity_bytes > 0) m.nvme_capacity_bytes = r.nvme_capacity_bytes;
  }
  if (r.reserved_peak_bytes > 0) {
    m.reserved_peak_bytes = r.reserved_peak_bytes;
    m.outside_allocator_bytes = r.outside_allocator_bytes;
  }
  return m;
}

nlohmann::json to_json(const MemoryReport& r) { return to_json(memory_section(r)); }

}  // namespace twinsim
