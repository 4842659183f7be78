#pragma once
// The executor's parameters under the keys and layouts Hugging Face transformers uses, so
// a merged checkpoint loads with the safetensors package into GPT2LMHeadModel or
// LlamaForCausalLM's state dict (no transformers dependency here):
//   GPT-2 (transformers/models/gpt2/modeling_gpt2.py): "transformer.wte.weight",
//     "transformer.h.<i>.attn.c_attn.weight" [h, 3h] (Conv1D stores [in, out]: q, k and v
//     side by side, transposed), "...mlp.c_fc.weight" [h, 4h], "transformer.ln_f.weight";
//     the head is tied to wte and not stored.
//   Llama (transformers/models/llama/modeling_llama.py): "model.embed_tokens.weight",
//     "model.layers.<i>.self_attn.q_proj.weight" [out, in] as nn.Linear, "...mlp.gate_proj",
//     "model.norm.weight", "lm_head.weight"; RoPE in transformers' rotate_half layout, the
//     executor's own (kernels/cpu/rope.cpp).
//   DeepSeekMoE (deepseek-ai/deepseek-moe-16b-base modeling_deepseek.py, model_type
//     "deepseek"): Llama's keys, and in a MoE layer "...mlp.gate.weight" (the router
//     [experts, h]), "...mlp.experts.<j>.gate_proj.weight", "...mlp.shared_experts.up_proj.weight".
//   DeepSeek-V2 (deepseek-ai/DeepSeek-V2 modeling_deepseek.py, model_type "deepseek_v2"):
//     those with latent attention, "...self_attn.q_a_proj.weight", "...kv_a_proj_with_mqa.weight",
//     "...kv_b_proj.weight"; the RoPE rows interleaved as its rotary embedding pairs them.
// A model of neither layout, or a parameter neither maps, is refused by name.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/model/weights.hpp"
#include "models/dtype.hpp"
#include "models/model_spec.hpp"

namespace twinsim::exec {

struct HfTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

// `params`: every parameter by the executor's name, with its spec and full row-major values.
std::vector<HfTensor> to_hf_names(const ModelSpec& model,
                                  const std::map<std::string, std::pair<ParamSpec, std::vector<float>>>& params);

// The transformers config.json for those tensors (GPT2Config / LlamaConfig): the shapes,
// and the executor's numerics (exec/model/transformer_config.hpp: LayerNorm/RMSNorm eps,
// RoPE theta; GPT-2's tanh GeLU "gelu_new"; no dropout), with `dtype` as torch_dtype.
// Refuses the models to_hf_names refuses.
nlohmann::json hf_config(const ModelSpec& model, Dtype dtype);

}  // namespace twinsim::exec
