#pragma once
// LoRA and QLoRA fine-tuning (training.lora): the base model frozen, possibly quantised to
// 4 bits, and a pair of trainable low-rank matrices beside each targeted linear layer,
// W x + (alpha / r) B A x (Hu et al. 2021, "LoRA", §4.1; Dettmers et al. 2023, "QLoRA", §3).
// One home for the adapters' shapes and parameter counts: the memory model, the event
// engine's op pricing and the search's estimate all call these (the frozen base's bytes:
// sim/memory/weights.hpp lora_base_matrix_bytes).
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/dtype.hpp"
#include "models/model_spec.hpp"
#include "models/plan.hpp"

namespace twinsim {

// The linear layers an adapter can sit beside, as Hugging Face PEFT names their modules in
// a Llama (q_proj ... down_proj); a non-gated MLP's two layers are `up` and `down`.
enum class LoraModule { q, k, v, o, gate, up, down };
inline constexpr LoraModule kLoraModules[] = {LoraModule::q,    LoraModule::k,  LoraModule::v,   LoraModule::o,
                                              LoraModule::gate, LoraModule::up, LoraModule::down};
std::string_view to_string(LoraModule m);

// How the frozen base's weight matrices are stored. nf4: QLoRA's 4-bit NormalFloat with its
// double quantisation (one fp8 absmax per block of 64 weights, one fp32 constant per 256
// of those: 4 + 8/64 + 32/(64 x 256) = 4.127 bits a weight, QLoRA §3 "Double
// Quantization"); int4: 4 bits with one fp16 scale per group of 128 (GPTQ/AWQ's packing,
// as inference.weight_dtype int4); fp8: 1 byte; bf16/fp16: 2 bytes.
enum class LoraBase { bf16, fp16, fp8, int4, nf4 };
std::string_view to_string(LoraBase b);

struct LoraSpec {
  int rank = 8;         // r
  double alpha = 16;    // the adapters' output is scaled by alpha / r (numerics only)
  unsigned modules = 0;  // bit per LoraModule
  LoraBase base = LoraBase::bf16;
  bool targets(LoraModule m) const { return (modules >> static_cast<int>(m)) & 1u; }
};

// One targeted linear layer on one GPU: its input and output widths after TP (Megatron's
// layout: a column-parallel layer's A takes the whole input and its B the local columns; a
// row-parallel layer's A the local rows and its B the whole output).
struct LoraAdapter {
  LoraModule module;
  std::int64_t in = 0, out = 0;
  std::int64_t params(int rank) const { return static_cast<std::int64_t>(rank) * (in + out); }
};

// The adapters beside a layer's GEMM op (op names: attn.qkv, attn.proj, mlp.gate_up,
// mlp.fc1, mlp.down, mlp.fc2), on one GPU; empty for any other op or untargeted modules.
std::vector<LoraAdapter> lora_adapters(const ModelSpec& model, const Plan& plan, const LoraSpec& lora,
                                       std::string_view op_name);

// Trainable adapter parameters of one dense transformer layer on one GPU.
std::int64_t lora_layer_params(const ModelSpec& model, const Plan& plan, const LoraSpec& lora);

}  // namespace twinsim
