#pragma once
// Data-parallel gradient compression with error feedback (plan.gradient_compression, ZeRO
// 0-1 in the executor), the numerics of what the simulator prices (sim/training/zero_comm):
// before the reduction each rank adds its residual to its gradients, quantises them in
// blocks of 2,048 values with one fp32 scale each (absmax / 127 for int8, / 7 for int4,
// round to nearest), and keeps what the quantisation lost as the next residual (Seide et
// al. 2014 §3; Karimireddy et al. 2019, Alg. 2). The reduction then sums the ranks'
// dequantised gradients in fp32, as a receiver of int8 blocks would; the CPU collectives
// still move 32- or 16-bit values, so the executor shows the compression's effect on
// training, not its saving in time. topk (Lin et al. 2018) sends the largest values of the
// whole buffer instead, the rest staying in the residual.
#include <cstddef>
#include <vector>

#include "exec/model/tensor.hpp"
#include "models/plan.hpp"

namespace twinsim::exec {

constexpr std::size_t kGradQuantBlock = 2048;  // values per fp32 scale (as the simulator's wire bytes)

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
  template <class T>
  void compress(T* g, std::size_t n);

 private:
  GradCompression kind_ = GradCompression::none;
  double topk_ratio_ = 0.01;
  Tensor residual_;
  std::vector<float> sent_;  // scratch for the dequantised values, kept between steps
};

}  // namespace twinsim::exec
