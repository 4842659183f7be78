#pragma once
// PowerSGD (Vogels et al. 2019, "PowerSGD: Practical Low-Rank Gradient Compression for
// Distributed Optimization", Alg. 1 with error feedback), the executor's reduction of one
// flat gradient block over the data-parallel group (plan.gradient_compression: powersgd,
// ZeRO 0-1), in the order PyTorch's powerSGD_hook runs it (torch/distributed/algorithms/
// ddp_comm_hooks/powerSGD_hook.py, error feedback and warm start on):
//   1. each rank adds its residual to its gradients (M');
//   2. the values it does not compress (vectors, and matrices whose rank-r factors would
//      not save 2x: _should_compress, min_compression_rate 2) are all-reduced whole;
//   3. each matrix M (a parameter's rows x cols on this rank) gives P = M Q with the
//      warm-started Q (drawn once from N(0,1), the same on every rank, then the last step's),
//      the P are all-reduced, and each orthogonalised (Gram-Schmidt);
//   4. Q = M^T P, the Q are all-reduced;
//   5. the block becomes the sum over ranks, P Q^T for the matrices, and each rank keeps
//      M' - sum / ranks as its next residual (what PyTorch's hook keeps: the average is its
//      result).
// The simulator prices the same steps (sim/training/zero_comm powersgd_share). PyTorch runs
// plain all-reduces for its first start_powerSGD_iter steps; twinsim compresses from the
// first, as the simulator prices every step alike. The factors and the scratch are not
// tracked memory (the simulator does not count them either: under 0.1% of the values at
// rank 4 on Llama-2-7B); the fp32 residual is, as grads.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/model/tensor.hpp"
#include "exec/model/weights.hpp"
#include "exec/runtime/communicator.hpp"

namespace twinsim::exec {

// Gram-Schmidt over the columns of a rows x cols row-major matrix, in place: each column
// divided by its norm (+ 1e-8, as PyTorch's _orthogonalize, for an all-zero gradient), then
// removed from the columns after it.
void orthogonalize(float* a, std::size_t rows, std::size_t cols);

class PowerSgdReducer {
 public:
  PowerSgdReducer() = default;
  // The block's matrices and ranges sent whole, from its parameters' shapes on this rank;
  // `seed` draws the first Q (equal on every DP rank).
  PowerSgdReducer(const ParamBlock& block, int rank, std::uint64_t seed);
  bool active() const { return residual_.size() > 0; }
  // In place: g (the block's flat grads, storage T) becomes the sum over the group.
  template <class T>
  void reduce(T* g, std::size_t n, Communicator& dp);

  struct Matrix {
    std::size_t offset = 0, rows = 0, cols = 0, rank = 0;
    std::size_t p_at = 0, q_at = 0;  // its factors' place in the P and Q buffers
  };
  const std::vector<Matrix>& matrices() const { return matrices_; }

 private:
  std::vector<Matrix> matrices_;
  std::vector<std::pair<std::size_t, std::size_t>> whole_;  // (offset, count) sent whole
  Tensor residual_;                 // fp32, one per gradient value of the block: grads
  std::vector<float> p_, q_;        // every matrix's factors, back to back (q_: warm start)
  std::vector<float> work_, sent_, sum_;  // M' of the block; the values sent whole; the block's sum
};

}  // namespace twinsim::exec
