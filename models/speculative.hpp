#pragma once
// Speculative decoding (Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding"; Chen et al. 2023): each decode step proposes K tokens cheaply and
// the served model checks all of them in one forward pass over K + 1 positions per
// sequence, keeping the longest accepted run plus one token of its own. The proposer is a
// small draft model run K times (vLLM `speculative_config: {model: ...}`) or an n-gram
// lookup in the prompt and output so far (vLLM `method: ngram`, prompt lookup decoding),
// whose cost on the CPU is not priced.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

enum class SpeculativeMethod { ngram, draft };

struct SpeculativeDecoding {
  SpeculativeMethod method = SpeculativeMethod::ngram;
  int tokens = 4;                        // K: tokens proposed per step
  double acceptance_rate = 0.7;          // alpha: each proposed token's chance to be accepted, independently
  std::optional<ModelSpec> draft_model;  // method draft

  // Expected tokens one step yields, Leviathan et al. 2023 Eq. (1): (1 - alpha^(K+1)) / (1 - alpha),
  // K + 1 when every proposal is accepted.
  double tokens_per_step() const {
    if (acceptance_rate >= 1) return tokens + 1.0;
    return (1 - std::pow(acceptance_rate, tokens + 1)) / (1 - acceptance_rate);
  }
};

std::string_view to_string(SpeculativeMethod m);

// The served plan as a draft model runs it beside the served one: the same TP group, one
// stage holding all the draft's layers (speculation runs without pipeline stages).
inline Plan draft_plan(const Plan& served, const ModelSpec& draft) {
  Plan p = served;
  p.virtual_stages = 1;
  p.stage_layers = {static_cast<int>(draft.layers)};
  return p;
}

}  // namespace twinsim
