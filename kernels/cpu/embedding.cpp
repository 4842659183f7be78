#include "kernels/cpu/embedding.hpp"

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/head_view.hpp"

namespace twinsim::kernels::cpu {
namespace {

// The float rows of a [rows, channels] T gradient table that a backward adds into. For
// T = float, the table's own rows. Otherwise a float copy of each row, loaded on its first
// touch and rounded back by store(): only the touched rows, since a vocabulary-sized
// float copy of dwte would cost far more than the batch's few rows.
template <class T>
class TouchedRows {
 public:
  TouchedRows(T* table, int channels) : table_(table), channels_(channels) {}

  float* row(long index) {
    if constexpr (std::is_same_v<T, float>) {
      return table_ + index * channels_;
    } else {
      auto [it, fresh] = slot_.try_emplace(index, slot_.size());
      const std::size_t first = it->second * channels_;
      if (fresh) {
        const T* stored = table_ + index * channels_;
        for (int c = 0; c < channels_; ++c) scratch_.push_back(to_float(stored[c]));
      }
      return scratch_.data() + first;
    }
  }

  void store() {
    if constexpr (!std::is_same_v<T, float>)
      for (auto [index, s] : slot_)
        for (int c = 0; c < channels_; ++c)
          table_[index * channels_ + c] = from_float<T>(scratch_[s * channels_ + c]);
  }

 private:
  T* table_;
  int channels_;
  std::unordered_map<long, std::size_t> slot_;  // table row -> row of scratch_
  std::vector<float> scratch_;
};

}  // namespace

template <class T>
void embedding_forward(const int* tokens, const T* wte, const std::type_identity_t<T>* wpe, T* out,
                       int batch, int seq, int channels) {
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s) {
      long bs = static_cast<long>(b) * seq + s;
      const T* tok = wte + static_cast<long>(tokens[bs]) * channels;
      const T* pos = wpe ? wpe + static_cast<long>(s) * channels : nullptr;
      T* o = out + bs * channels;
      for (int c = 0; c < channels; ++c)
        o[c] = from_float<T>(to_float(tok[c]) + (pos ? to_float(pos[c]) : 0.0f));
    }
}

template <class T>
void embedding_backward(const T* dout, const int* tokens, T* dwte, std::type_identity_t<T>* dwpe,
                        int batch, int seq, int channels) {
  TouchedRows<T> dtok(dwte, channels);
  // Every position row below seq is touched (by each batch row), so it is staged whole.
  RowsOut<T> dpos(dwpe, channels, seq, channels, Start::stored);
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s) {
      long bs = static_cast<long>(b) * seq + s;
      const T* d = dout + bs * channels;
      float* tok = dtok.row(tokens[bs]);
      for (int c = 0; c < channels; ++c) tok[c] += to_float(d[c]);
      if (dwpe == nullptr) continue;
      float* pos = dpos.data() + static_cast<long>(s) * dpos.stride();
      for (int c = 0; c < channels; ++c) pos[c] += to_float(d[c]);
    }
  dtok.store();
  dpos.store();
}

#define TWINSIM_EMBEDDING_INSTANTIATE(T)                                                  \
  template void embedding_forward<T>(const int*, const T*, const T*, T*, int, int, int); \
  template void embedding_backward<T>(const T*, const int*, T*, T*, int, int, int);
TWINSIM_EMBEDDING_INSTANTIATE(float)
TWINSIM_EMBEDDING_INSTANTIATE(bf16)
TWINSIM_EMBEDDING_INSTANTIATE(fp16)
#undef TWINSIM_EMBEDDING_INSTANTIATE

}  // namespace twinsim::kernels::cpu
