#pragma once
// Which transformer layers a pipeline stage holds, counted by kind (dense / MoE):
// all layers of one kind have the same weights and activations, so counts suffice.
#include <cstdint>

#include "models/model_spec.hpp"
#include "models/pipeline_split.hpp"
#include "models/plan.hpp"

namespace twinsim {

struct StageLayers {
  std::int64_t dense = 0;
  std::int64_t moe = 0;
  std::int64_t total() const { return dense + moe; }
};

// Layers of pipeline stage `stage`: plan.stage_layers when given, else layers / pp each.
// With the interleaved schedule a stage holds virtual_stages model chunks, chunk j of stage
// i being model chunk j * pp + i (Narayanan et al. 2021, §2.2.2, Fig. 4); a stage's layers
// split into its chunks as models/pipeline_split says: as evenly as they go, the first chunks
// one layer longer when virtual_stages does not divide them (Llama 3 405B: 126 layers on 16
// stages, one fewer on the first and the last, Dubey et al. 2024 §3.3.2), the embedding's and
// the loss's places counted where the plan accounts for them.
StageLayers stage_layers(const ModelSpec& model, const Plan& plan, int stage);

// Layers on pipeline stage `stage`, all its chunks together.
std::int64_t stage_layer_count(const ModelSpec& model, const Plan& plan, int stage);
// The layers [first, first + count) of chunk `chunk` of stage `stage`.
std::int64_t chunk_layer_count(const ModelSpec& model, const Plan& plan, int stage, int chunk);
std::int64_t chunk_first_layer(const ModelSpec& model, const Plan& plan, int stage, int chunk);

// A representative layer index of each kind (for building that kind's layer ops).
inline std::int64_t some_dense_layer(const ModelSpec&) { return 0; }
inline std::int64_t some_moe_layer(const ModelSpec& model) { return model.layers - 1; }

}  // namespace twinsim
