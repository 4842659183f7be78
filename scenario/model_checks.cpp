#include "scenario/model_checks.hpp"

#include "scenario/errors.hpp"

namespace twinsim {

void check_model(const ModelSpec& m, const std::string& path) {
  if (m.heads % m.kv_heads != 0)
    throw ScenarioError(join_key(path, "kv_heads"), std::to_string(m.kv_heads),
                        "does not divide " + join_key(path, "heads") + "=" + std::to_string(m.heads));
  if (m.moe && m.moe->dense_layers > m.layers)
    throw ScenarioError(join_key(path, "moe.dense_layers"), std::to_string(m.moe->dense_layers),
                        "exceeds " + join_key(path, "layers") + "=" + std::to_string(m.layers));
  if (m.global_every > 0 && m.sliding_window == 0)
    throw ScenarioError(join_key(path, "global_every"), std::to_string(m.global_every),
                        "needs " + join_key(path, "sliding_window") + " > 0");
  if (m.mla && m.kv_heads != m.heads)
    throw ScenarioError(join_key(path, "kv_heads"), std::to_string(m.kv_heads),
                        "must equal " + join_key(path, "heads") + "=" + std::to_string(m.heads) +
                            " with model.mla (every head rebuilds its own K and V from the latent)");
  if (m.mla && m.qk_norm)
    throw ScenarioError(join_key(path, "qk_norm"), "true", "is not modelled with model.mla");
  if (m.mla && m.position != Position::rope)
    throw ScenarioError(join_key(path, "position"), "learned", "must be rope with model.mla (its decoupled RoPE key)");
  if (m.mtp_layers > 0 && !m.moe)
    throw ScenarioError(join_key(path, "mtp_layers"), std::to_string(m.mtp_layers),
                        "is modelled for MoE models (DeepSeek-V3) only");
}

}  // namespace twinsim
