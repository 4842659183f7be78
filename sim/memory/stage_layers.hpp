#pragma once
// Which transformer layers a pipeline stage holds, counted by kind (dense / MoE):
// all layers of one kind have the same weights and activations, so counts suffice.
#include <cstdint>

#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

struct StageLayers {
  std::int64_t dense = 0;
  std::int64_t moe = 0;
  std::int64_t total() const { return dense + moe; }
};

// Layers of pipeline stage `stage`: plan.stage_layers when given, else layers / pp each;
// with the interleaved schedule, model chunk c = j * pp + stage for j < virtual_stages,
// each of layers / (pp * v) layers (Narayanan et al. 2021, §2.2.2, Fig. 4).
StageLayers stage_layers(const ModelSpec& model, const Plan& plan, int stage);

// A representative layer index of each kind (for building that kind's layer ops).
inline std::int64_t some_dense_layer(const ModelSpec&) { return 0; }
inline std::int64_t some_moe_layer(const ModelSpec& model) { return model.layers - 1; }

}  // namespace twinsim
