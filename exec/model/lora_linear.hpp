#pragma once
// LoRA fine-tuning in the executor (training.lora): beside a frozen linear layer
// y = x W^T, a trainable low-rank pair y += (alpha / r) (x A^T) B^T, A [r, in], B [out, r]
// (Hu et al. 2021, "LoRA", §4.1: A Gaussian, B zero, so training starts from the base
// model). Every other parameter is frozen: ParamSpec::trainable false, no weight gradient
// GEMM for the frozen matrices, and the optimizer steps the adapters only.
// The adapters' shapes are the simulator's (models/lora.hpp); the executor runs them on
// one TP rank (train_config.cpp refuses tp > 1 with LoRA).
#include <string>
#include <vector>

#include "exec/model/model_context.hpp"
#include "exec/model/tensor.hpp"
#include "exec/model/transformer_config.hpp"
#include "exec/model/weights.hpp"

namespace twinsim::exec {

// The adapter pair's specs for the linear layer "<prefix>weight" ([out, in]):
// "<prefix>lora_a" and "<prefix>lora_b"; none when the config targets no such module.
std::vector<ParamSpec> lora_param_specs(const TransformerConfig& c, LoraModule module, const std::string& prefix,
                                        std::int64_t in, std::int64_t out);

// The specs with every parameter frozen under LoRA except the adapters (unchanged without).
std::vector<ParamSpec> freeze_base(const TransformerConfig& c, std::vector<ParamSpec> specs);

// Whether the base weights take a weight gradient (false under LoRA: they are frozen).
inline bool base_trains(const TransformerConfig& c) { return !c.lora.has_value(); }

// One linear layer's adapter pair in a layer's ParamBlock; inactive when not targeted.
class LoraLinear {
 public:
  LoraLinear() = default;
  LoraLinear(const TransformerConfig& c, ParamBlock& params, LoraModule module, const std::string& prefix, int in,
             int out);
  bool active() const { return a_ >= 0; }
  // y [tokens, out] += s B A x; keeps A x [tokens, r] in `ax` for the backward.
  template <class T>
  void forward(const ModelContext& ctx, const T* x, T* y, int tokens, Tensor& ax) const;
  // With dy [tokens, out]: dB += s dy^T (A x), dA += (s dy B)^T x, dx [tokens, in] += s dy B A;
  // releases `ax`.
  template <class T>
  void backward(const ModelContext& ctx, const T* dy, const T* x, Tensor& ax, T* dx, int tokens) const;

 private:
  ParamBlock* p_ = nullptr;
  int a_ = -1, b_ = -1, rank_ = 0, in_ = 0, out_ = 0;
  float scale_ = 0;  // alpha / r
};

}  // namespace twinsim::exec
