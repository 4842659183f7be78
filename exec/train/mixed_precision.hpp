#pragma once
// Mixed precision as in Micikevicius et al. 2018 ("Mixed Precision Training"): weights,
// grads and activations are stored in bf16/fp16 (kernels/common/storage.hpp) and the
// weights kept in fp32 as master copies by the optimizer; every kernel computes in fp32.
// fp16 adds dynamic loss scaling (§3.2): the loss is multiplied
// by S before backward; an inf/nan in the grads skips the step and halves S, and S
// doubles after `window` clean steps (Megatron DynamicGradScaler, hysteresis 1).
#include <cstddef>

#include "kernels/common/storage.hpp"
#include "models/dtype.hpp"

namespace twinsim::exec {

// Round to nearest even bf16 (8-bit exponent, 7-bit mantissa); inf/nan pass through.
float round_to_bf16(float x);
// Round to nearest even IEEE binary16; beyond 65504 (after rounding) becomes inf.
float round_to_fp16(float x);
// Rounds n fp32 values in place to the nearest `storage` numbers (fp32: unchanged): the
// serving path's weights, which stay fp32 arrays holding 16-bit values.
void round_to_storage(Dtype storage, float* data, std::size_t n);
// Writes n fp32 values into the storage type T (float, kernels::bf16 or kernels::fp16),
// each rounded once: the cast-on-copy of the fp32 master weights into the model's
// 16-bit ones (Megatron's _copy_main_params_to_model_params).
template <class T>
void store_rounded(const float* in, T* out, std::size_t n);
// Whether any of n values of the storage type T is inf or nan.
template <class T>
bool has_inf_or_nan(const T* data, std::size_t n);

class LossScaler {
 public:
  LossScaler(float initial_scale, int window) : scale_(initial_scale), window_(window) {}
  float scale() const { return scale_; }
  // Records one step's outcome; returns true when the optimizer may step.
  bool update(bool found_inf);
  int skipped_steps() const { return skipped_; }
  int good_steps() const { return good_steps_; }
  // Puts back a state saved from scale(), good_steps(), skipped_steps() (checkpoints).
  void restore(float scale, int good_steps, int skipped) {
    scale_ = scale;
    good_steps_ = good_steps;
    skipped_ = skipped;
  }

 private:
  float scale_;
  int window_;
  int good_steps_ = 0;
  int skipped_ = 0;
};

}  // namespace twinsim::exec
