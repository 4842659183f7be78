#pragma once
// What autograd keeps from one Llama layer in LitGPT's LoRA fine-tuning (the stack's
// `layer_kernels: litgpt_bf16`): LitGPT's own model code of commit 8641822 (lit_gpt/model.py,
// lora.py), the one its resource tables were measured with, on a bf16 model (--precision
// bf16-true), LoRA on the query and value (finetune/lora.py's defaults: r 8, dropout 0.05, one
// dropout on the fused qkv input), no gradient checkpointing. Frozen bf16 linears keep no
// input (autograd saves it for a weight gradient only); bitsandbytes' 4-bit linears
// (MatMul4Bit, `ctx.tensors = (A, B)`) keep theirs.
//
// Counted, not estimated: scripts/litgpt_lora_saved_census.py runs that code on the CPU and
// catches every saved tensor (saved_tensors_hooks, each storage once, parameters not). Each
// term below is one storage of that count. One device difference: the CPU's dropout keeps a
// bf16 noise tensor, CUDA's fused native_dropout a bool mask (1 byte an element), which this
// count uses (the runs were on A100s).
#include <cstdint>

#include "models/lora.hpp"
#include "models/model_spec.hpp"

namespace twinsim {

// Bytes one layer keeps for `tokens` tokens of one micro-batch (a multi-head-attention Llama,
// LoRA on q and v; scenario/validate refuses anything else under litgpt_bf16).
std::int64_t litgpt_lora_layer_saved_bytes(const ModelSpec& model, std::int64_t tokens, const LoraSpec& lora);

}  // namespace twinsim
