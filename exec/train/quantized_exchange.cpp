#include "exec/train/quantized_exchange.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "exec/train/grad_compression.hpp"
#include "kernels/common/storage.hpp"
#include "models/quantized_grads.hpp"

namespace twinsim::exec {

namespace {

constexpr auto kBlock = static_cast<std::size_t>(kGradQuantBlock);

std::size_t blocks_of(std::size_t count) { return (count + kBlock - 1) / kBlock; }

// The chunks travel as fp16 elements: only their bits matter, no arithmetic is done on them.
using Words = std::vector<kernels::fp16>;
unsigned char* bytes_of(Words& w, std::size_t word) { return reinterpret_cast<unsigned char*>(w.data() + word); }

template <class T>
void widen(const T* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = kernels::to_float(in[i]);
}

}  // namespace

std::size_t quantized_chunk_words(GradCompression kind, std::size_t count) {
  const auto bytes = static_cast<std::size_t>(quantized_grad_bytes(kind, static_cast<std::int64_t>(count)));
  return (bytes + 1) / 2;
}

void pack_quantized(const float* values, std::size_t count, GradCompression kind, unsigned char* bytes) {
  std::fill_n(bytes, 2 * quantized_chunk_words(kind, count), 0);
  unsigned char* steps = bytes + 4 * blocks_of(count);
  const bool int8 = kind == GradCompression::int8;
  for (std::size_t b = 0, lo = 0; lo < count; ++b, lo += kBlock) {
    const std::size_t hi = std::min(count, lo + kBlock);
    const float scale = block_scale(values + lo, hi - lo, kind);
    std::memcpy(bytes + 4 * b, &scale, sizeof scale);
    for (std::size_t i = lo; i < hi; ++i) {
      const int q = static_cast<int>(quantized_step(values[i], scale, kind));
      if (int8) steps[i] = static_cast<unsigned char>(static_cast<signed char>(q));
      else steps[i / 2] = static_cast<unsigned char>(steps[i / 2] | ((q + 8) << (4 * (i % 2))));
    }
  }
}

void add_dequantized(const unsigned char* bytes, std::size_t count, GradCompression kind, float* sum) {
  const unsigned char* steps = bytes + 4 * blocks_of(count);
  const bool int8 = kind == GradCompression::int8;
  for (std::size_t b = 0, lo = 0; lo < count; ++b, lo += kBlock) {
    float scale = 0;
    std::memcpy(&scale, bytes + 4 * b, sizeof scale);
    for (std::size_t i = lo; i < std::min(count, lo + kBlock); ++i) {
      const int q = int8 ? static_cast<signed char>(steps[i]) : ((steps[i / 2] >> (4 * (i % 2))) & 0xF) - 8;
      sum[i] += static_cast<float>(q) * scale;
    }
  }
}

template <class T>
void quantized_reduce_scatter(const T* send, T* recv, std::size_t count, GradCompression kind, Communicator& group) {
  const auto ranks = static_cast<std::size_t>(group.size()), me = static_cast<std::size_t>(group.rank());
  const std::size_t words = quantized_chunk_words(kind, count);
  Words out(ranks * words), in(ranks * words);
  std::vector<float> chunk(count);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r == me) continue;  // this rank's own chunk stays here, unquantised again
    widen(send + r * count, count, chunk.data());
    pack_quantized(chunk.data(), count, kind, bytes_of(out, r * words));
  }
  group.all_to_all(out.data(), in.data(), words);
  widen(send + me * count, count, chunk.data());
  for (std::size_t r = 0; r < ranks; ++r)
    if (r != me) add_dequantized(bytes_of(in, r * words), count, kind, chunk.data());
  for (std::size_t i = 0; i < count; ++i) recv[i] = kernels::from_float<T>(chunk[i]);
}

template <class T>
void quantized_all_reduce(T* data, std::size_t n, GradCompression kind, Communicator& group) {
  const auto ranks = static_cast<std::size_t>(group.size()), me = static_cast<std::size_t>(group.rank());
  const std::size_t count = (n + ranks - 1) / ranks, words = quantized_chunk_words(kind, count);
  std::vector<float> whole(ranks * count, 0.0f);  // the last chunk padded with zeros
  widen(data, n, whole.data());
  quantized_reduce_scatter(whole.data(), whole.data() + me * count, count, kind, group);
  Words mine(words), all(ranks * words);
  pack_quantized(whole.data() + me * count, count, kind, bytes_of(mine, 0));
  group.all_gather(mine.data(), all.data(), words);
  std::fill(whole.begin(), whole.end(), 0.0f);
  for (std::size_t r = 0; r < ranks; ++r)
    add_dequantized(bytes_of(all, r * words), count, kind, whole.data() + r * count);
  for (std::size_t i = 0; i < n; ++i) data[i] = kernels::from_float<T>(whole[i]);
}

#define TWINSIM_QUANTIZED_EXCHANGE(T)                                                                   \
  template void quantized_reduce_scatter<T>(const T*, T*, std::size_t, GradCompression, Communicator&); \
  template void quantized_all_reduce<T>(T*, std::size_t, GradCompression, Communicator&);
TWINSIM_QUANTIZED_EXCHANGE(float)
TWINSIM_QUANTIZED_EXCHANGE(kernels::bf16)
TWINSIM_QUANTIZED_EXCHANGE(kernels::fp16)
#undef TWINSIM_QUANTIZED_EXCHANGE

}  // namespace twinsim::exec
