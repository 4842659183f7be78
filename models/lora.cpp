#include "models/lora.hpp"

#include "models/checked_math.hpp"
#include "models/layer_ops.hpp"
#include "models/op_names.hpp"

namespace twinsim {

std::string_view to_string(LoraModule m) {
  switch (m) {
    case LoraModule::q: return "q";
    case LoraModule::k: return "k";
    case LoraModule::v: return "v";
    case LoraModule::o: return "o";
    case LoraModule::gate: return "gate";
    case LoraModule::up: return "up";
    case LoraModule::down: return "down";
  }
  return "?";
}

std::string_view to_string(LoraBase b) {
  switch (b) {
    case LoraBase::bf16: return "bf16";
    case LoraBase::fp16: return "fp16";
    case LoraBase::fp8: return "fp8";
    case LoraBase::int4: return "int4";
    case LoraBase::nf4: return "nf4";
  }
  return "?";
}

namespace {

void add_if(std::vector<LoraAdapter>& out, const LoraSpec& lora, LoraModule m, std::int64_t in, std::int64_t cols) {
  if (lora.targets(m)) out.push_back({m, in, cols});
}

}  // namespace

std::vector<LoraAdapter> lora_adapters(const ModelSpec& model, const Plan& plan, const LoraSpec& lora,
                                       std::string_view op_name) {
  std::vector<LoraAdapter> out;
  const std::int64_t h = model.hidden;
  const std::int64_t q_cols = heads_per_gpu(model, plan.tp) * model.head_dim;
  const std::int64_t kv_cols = kv_heads_per_gpu(model, plan.tp) * model.head_dim;
  const std::int64_t ffn = model.ffn_hidden / plan.tp;
  if (op_name == op_names::kAttnQkv) {  // column-parallel: whole input, local columns
    add_if(out, lora, LoraModule::q, h, q_cols);
    add_if(out, lora, LoraModule::k, h, kv_cols);
    add_if(out, lora, LoraModule::v, h, kv_cols);
  } else if (op_name == op_names::kAttnProj) {  // row-parallel: local rows, whole output
    add_if(out, lora, LoraModule::o, q_cols, h);
  } else if (op_name == op_names::kMlpGateUp) {
    add_if(out, lora, LoraModule::gate, h, ffn);
    add_if(out, lora, LoraModule::up, h, ffn);
  } else if (op_name == op_names::kMlpFc1) {
    add_if(out, lora, LoraModule::up, h, ffn);
  } else if (op_name == op_names::kMlpDown || op_name == op_names::kMlpFc2) {
    add_if(out, lora, LoraModule::down, ffn, h);
  }
  return out;
}

std::int64_t lora_layer_params(const ModelSpec& model, const Plan& plan, const LoraSpec& lora) {
  std::int64_t total = 0;
  for (std::string_view op : {op_names::kAttnQkv, op_names::kAttnProj, op_names::kMlpGateUp, op_names::kMlpFc1,
                              op_names::kMlpDown, op_names::kMlpFc2}) {
    const bool gated_op = op == op_names::kMlpGateUp || op == op_names::kMlpDown;
    const bool plain_op = op == op_names::kMlpFc1 || op == op_names::kMlpFc2;
    if ((gated_op && !model.gated()) || (plain_op && model.gated())) continue;
    for (const LoraAdapter& a : lora_adapters(model, plan, lora, op)) total = checked_add(total, a.params(lora.rank));
  }
  return total;
}

}  // namespace twinsim
