#include "kernels/cpu/linear.hpp"

#include <algorithm>

#include "kernels/cpu/gemm.hpp"

namespace twinsim::kernels::cpu {

namespace {

// y[t, :] = bias for every token: the C that a beta = 1 GEMM adds the product to.
template <class T>
void fill_rows_with_bias(const T* bias, T* y, int tokens, int out) {
  for (int t = 0; t < tokens; ++t) std::copy(bias, bias + out, y + static_cast<long>(t) * out);
}

// The fp32 path of the bias grad: sums straight into the float dbias.
void sum_rows_into(const float* dy, float* dbias, int tokens, int out, bool accumulate) {
  if (!accumulate)
    for (int o = 0; o < out; ++o) dbias[o] = 0.0f;
  for (int t = 0; t < tokens; ++t) {
    const float* row = dy + static_cast<long>(t) * out;
    for (int o = 0; o < out; ++o) dbias[o] += row[o];
  }
}

// The 16-bit path: the same fp32 sums, in the same order, kept in a float block on the
// stack (columns kChunk at a time, so rows are still read contiguously) and rounded once.
template <class T>
void sum_rows_rounded_once(const T* dy, T* dbias, int tokens, int out, bool accumulate) {
  constexpr int kChunk = 256;
  float sum[kChunk];
  for (int o0 = 0; o0 < out; o0 += kChunk) {
    const int width = std::min(kChunk, out - o0);
    for (int o = 0; o < width; ++o) sum[o] = accumulate ? to_float(dbias[o0 + o]) : 0.0f;
    for (int t = 0; t < tokens; ++t) {
      const T* row = dy + static_cast<long>(t) * out + o0;
      for (int o = 0; o < width; ++o) sum[o] += to_float(row[o]);
    }
    for (int o = 0; o < width; ++o) dbias[o0 + o] = from_float<T>(sum[o]);
  }
}

}  // namespace

template <class T>
void linear_forward(const T* x, const T* weight, const std::type_identity_t<T>* bias, T* y,
                    int tokens, int in, int out) {
  if constexpr (std::is_same_v<T, float>) {
    // fp32: the product, then the bias added in place (each output rounded twice in fp32).
    gemm_forward(x, weight, y, tokens, out, in, false, true);
    if (bias == nullptr) return;
    for (int t = 0; t < tokens; ++t) {
      float* row = y + static_cast<long>(t) * out;
      for (int o = 0; o < out; ++o) row[o] += bias[o];
    }
  } else {
    // 16 bits: rounding the product and then the sum would round twice, so the bias goes in
    // as the GEMM's C with beta = 1 and the fp32 sum is rounded once (torch.addmm's way).
    if (bias == nullptr) {
      gemm_forward(x, weight, y, tokens, out, in, false, true);
      return;
    }
    fill_rows_with_bias(bias, y, tokens, out);
    gemm_forward(x, weight, y, tokens, out, in, false, true, 1.0f, 1.0f);
  }
}

template <class T>
void linear_backward_input(const T* dy, const T* weight, T* dx, int tokens, int in, int out) {
  gemm_forward(dy, weight, dx, tokens, in, out, false, false);
}

template <class T>
void linear_backward_weight(const T* dy, const T* x, T* dweight, int tokens, int in, int out,
                            bool accumulate) {
  gemm_forward(dy, x, dweight, out, in, tokens, true, false, 1.0f, accumulate ? 1.0f : 0.0f);
}

template <class T>
void linear_backward_bias(const T* dy, std::type_identity_t<T>* dbias, int tokens, int out,
                          bool accumulate) {
  if constexpr (std::is_same_v<T, float>) sum_rows_into(dy, dbias, tokens, out, accumulate);
  else sum_rows_rounded_once(dy, dbias, tokens, out, accumulate);
}

#define TWINSIM_LINEAR(T)                                                                       \
  template void linear_forward<T>(const T*, const T*, const T*, T*, int, int, int);            \
  template void linear_backward_input<T>(const T*, const T*, T*, int, int, int);               \
  template void linear_backward_weight<T>(const T*, const T*, T*, int, int, int, bool);        \
  template void linear_backward_bias<T>(const T*, T*, int, int, bool);
TWINSIM_LINEAR(float)
TWINSIM_LINEAR(bf16)
TWINSIM_LINEAR(fp16)
#undef TWINSIM_LINEAR

}  // namespace twinsim::kernels::cpu
