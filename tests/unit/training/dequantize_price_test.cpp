// The int8 gradient exchange (plan.gradient_compression: int8) priced on a toy host file that
// lists its dequantise-add apart (kernel_efficiency "dequantize", issue 61): the dequantise
// passes at that rate, the quantise ones at "quantize"'s; a file without it prices both at
// "quantize"'s, as before. Every figure derived by hand below.
#include <gtest/gtest.h>

#include <string>

#include "scenario/load.hpp"
#include "sim/training/zero_comm.hpp"

namespace twinsim {
namespace {

// Two one-rank nodes behind a 10 GB/s link with no latency at the full rate; memory 100 GB/s,
// quantise at 0.1 of it (10 GB/s), dequantise at 0.5 (50 GB/s), no launch time.
std::string toy_host(const std::string& kernels) {
  return "model: tiny-gpt\n"
         "cluster:\n"
         "  gpu: {memory_GiB: 16, hbm_bandwidth_GBps: 100, peak_tflops: {fp32: 1}, gemm_efficiency: [[1, 1.0]],\n"
         "        kernel_launch_us: 0, kernel_efficiency: {" +
         kernels +
         "}}\n"
         "  gpus_per_node: 1\n"
         "  intra_node: {bandwidth_GBps: 300}\n"
         "  inter_node: {bandwidth_GBps: 10, latency_us: 0, nics_per_node: 1, efficiency: [[1, 1.0]]}\n"
         "training: {seq_len: 64, global_batch: 2, micro_batch: 1, precision: fp32}\n"
         "plan: {tp: 1, pp: 1, dp: 2, zero: 0, gradient_compression: int8}\n"
         "stack: none\n";
}

constexpr const char* kQuantize = "quantize: {fwd: [[1, 0.1]]}";
constexpr const char* kDequantize = "dequantize: {fwd: [[1, 0.5]]}";

double exchange_s(const std::string& kernels, CollectiveOp op) {
  const Scenario s = load_scenario_text(toy_host(kernels));
  return dp_gradient_reduce_s(s.cluster, s.plan, op, GroupLayout{2, 1}, 1e9, Dtype::fp32, {});
}

// 1e9 fp32 gradients, R = 2; a pass counts 4 + 1 + 4/2048 = 5.001953125 B a value.
//  compression of the whole buffer: 5.001953125e9 B / 10 GB/s          = 0.5001953125 s
//  pack of the other rank's half:   2.5009765625e9 B / 10 GB/s         = 0.25009765625 s
//  dequantise-add of the half got:  2.5009765625e9 B / 50 GB/s         = 0.05001953125 s
//  across nodes, a reduce-scatter of the packed 1.001953125e9 B: half leaves, / 10 GB/s,
//  plus NCCL Simple's base latency 8.4 us (collective_cost.cpp)        = 0.05010605625 s
//  reduce-scatter: 0.85041855625 s. An all-reduce adds the pack of the summed half
//  (0.25009765625), the all-gather of the packed chunks (0.05010605625) and the dequantise
//  of the whole buffer (5.001953125e9 / 50e9 = 0.1000390625): 1.25066133125 s.
TEST(DequantizePrice, TheExchangesDequantisePassesRunAtTheirOwnRate) {
  const std::string both = std::string(kQuantize) + ", " + kDequantize;
  EXPECT_NEAR(exchange_s(both, CollectiveOp::reduce_scatter), 0.85041855625, 1e-9);
  EXPECT_NEAR(exchange_s(both, CollectiveOp::all_reduce), 1.25066133125, 1e-9);
}

// The same file without "dequantize" (every host file before it): the dequantise passes at
// quantize's 10 GB/s. Reduce-scatter 0.5001953125 + 2 x 0.25009765625 + 0.05010605625 =
// 1.05049668125 s; all-reduce + 0.25009765625 + 0.05010605625 + 0.5001953125 = 1.85089570625 s.
TEST(DequantizePrice, AFileWithoutItPricesThemAsQuantisePasses) {
  EXPECT_NEAR(exchange_s(kQuantize, CollectiveOp::reduce_scatter), 1.05049668125, 1e-9);
  EXPECT_NEAR(exchange_s(kQuantize, CollectiveOp::all_reduce), 1.85089570625, 1e-9);
}

}  // namespace
}  // namespace twinsim
