#pragma once
// Data-parallel gradient compression with error feedback (plan.gradient_compression, ZeRO
// 0-1 in the executor), the numerics of what the simulator prices (sim/training/zero_comm):
// before the reduction each rank adds its residual to its gradients, quantises them in
// blocks of 2,048 values with one fp32 scale each (absmax / 127 for int8, / 7 for int4,
// round to nearest), and keeps what the quantisation lost as the next residual (Seide et
// al. 2014 §3; Karimireddy et al. 2019, Alg. 2). The int8 and int4 values then go on the
// wire as such, with their scales, and each receiver dequantises and sums them in fp32
// (exec/train/quantized_exchange.hpp). topk (Lin et al. 2018) sends the largest values of
// the whole buffer instead, the rest staying in the residual (the collectives move them
// as 32- or 16-bit values: the executor shows top-k's effect on training, not its time).
#include <cstddef>
#include <vector>

#include "exec/model/tensor.hpp"
#include "models/plan.hpp"
#include "models/quantized_grads.hpp"  // kGradQuantBlock: values per fp32 scale

namespace twinsim::exec {

// The block rule: a block's scale is its absmax / 127 (int8) or / 7 (int4); a value's step
// is value / scale rounded to nearest, within +-127 / +-7 (0 in an all-zero block).
float block_scale(const float* in, std::size_t n, GradCompression kind);
float quantized_step(float value, float scale, GradCompression kind);

// out = dequantise(quantise(in)), block by block; in and out may alias. topk: out keeps the
// ceil(topk_ratio x n) values of largest magnitude (ties: the lower index) and is 0 elsewhere.
void quantize_dequantize(const float* in, float* out, std::size_t n, GradCompression kind, double topk_ratio = 0.01);

class GradCompressor {
 public:
  GradCompressor() = default;
  // The residual of `n` gradient values, fp32, counted as grads (as the simulator does).
  GradCompressor(GradCompression kind, std::size_t n, double topk_ratio = 0.01);
  bool active() const { return kind_ != GradCompression::none; }
  // In place: g becomes dequantise(quantise(g + residual)); the residual keeps the rest.
  // The blocks start again every `chunk` values (0: one run of blocks), where the exchange
  // cuts the buffer into the ranks' shares, so that its own quantisation finds g on the grid.
  template <class T>
  void compress(T* g, std::size_t n, std::size_t chunk = 0);
  // int8 or int4: the values go on the wire quantised (quantized_exchange.hpp)
  bool quantized() const { return quantized_grad_bits(kind_) > 0; }
  GradCompression kind() const { return kind_; }

 private:
  GradCompression kind_ = GradCompression::none;
  double topk_ratio_ = 0.01;
  Tensor residual_;
  std::vector<float> sent_;  // scratch for the dequantised values, kept between steps
};

}  // namespace twinsim::exec
