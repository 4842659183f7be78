#pragma once
// plan.gradient_compression int8 / int4 on the wire, as the simulator prices it
// (sim/training/zero_comm.cpp dp_gradient_reduce_s; the bytes: models/quantized_grads.hpp).
// A reduce-scatter: each rank cuts its gradients (the residual already added and quantised
// by GradCompressor, blocks restarting at each cut) into one chunk per rank, block-quantises
// each other rank's chunk into its scales and values, sends it to that rank (an all-to-all),
// and sums its own chunk with the dequantised chunks it receives, in fp32. An all-reduce then
// quantises each rank's summed chunk again and all-gathers it the same way, every rank
// keeping the dequantised values (the simulator's two halves, each on int8 / int4: ZeRO++'s
// qgZ sends its gradients quantised both ways, Wang et al. 2023 §3.3).
// A packed chunk travels as 16-bit words (kernels::fp16 elements): the communicators move
// 16-bit elements bit for bit and count their bytes, so no byte element type is needed.
#include <cstddef>
#include <cstdint>

#include "exec/runtime/communicator.hpp"
#include "models/plan.hpp"

namespace twinsim::exec {

// 16-bit words of one packed chunk of `count` values: models' quantized_grad_bytes, rounded
// up to a whole word.
std::size_t quantized_chunk_words(GradCompression kind, std::size_t count);

// `count` values into the 2 x quantized_chunk_words bytes at `wire`: the blocks' fp32
// scales, then the values' steps (int8 one a byte, int4 two: the low nibble first, step + 8).
void pack_quantized(const float* values, std::size_t count, GradCompression kind, unsigned char* wire);
// Adds the dequantised values of a packed chunk to `sum` (count values).
void add_dequantized(const unsigned char* wire, std::size_t count, GradCompression kind, float* sum);

// `send` holds group.size() * count values; `recv` (count values, may be send's own chunk)
// gets this rank's chunk summed over the group.
template <class T>
void quantized_reduce_scatter(const T* send, T* recv, std::size_t count, GradCompression kind, Communicator& group);
// `data` (n values) becomes the group's sum on every rank, as its last quantisation left it.
template <class T>
void quantized_all_reduce(T* data, std::size_t n, GradCompression kind, Communicator& group);

}  // namespace twinsim::exec
