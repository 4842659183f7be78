// The kernels of a real run's profiler trace sized by the ATen ops that launched them
// (compare/trace_ops.hpp), on TraceLens's H100 trace of Qwen1.5-0.5B (a forward of 16
// sequences of 559 tokens in Hugging Face eager; scenarios/validation/real_runs/), and on a
// made-up trace whose links between kernels and ops are known by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "compare/trace_ops.hpp"

namespace twinsim::compare {
namespace {

nlohmann::json trace_file(const std::string& file) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/real_runs/" + file);
  return nlohmann::json::parse(in);
}

const TraceOp* first_of(const TraceOps& t, const std::string& op) {
  for (const TraceOp& o : t.ops)
    if (o.op == op) return &o;
  return nullptr;
}

TEST(TraceOps, QwenForwardKernelsSizedByTheirOps) {
  const TraceOps t = read_trace_ops(trace_file("tracelens_h100_qwen1.5-0.5b_rank0.json"), "qwen");
  EXPECT_EQ(t.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.steps, 1);
  EXPECT_NEAR(t.step_s, 34892.421e-6, 1e-9);  // the GPU's ProfilerStep#6 annotation
  int gemms = 0, flash = 0;
  for (const TraceOp& o : t.ops) gemms += o.kind == TraceOpKind::gemm, flash += o.kind == TraceOpKind::attention;
  // q, k, v (addmm: Qwen's biases), o, gate, up, down in each of 24 layers, and the rotary
  // embedding's fp32 bmm of the inverse frequencies by the positions
  EXPECT_EQ(gemms, 24 * 7 + 1);
  EXPECT_EQ(flash, 24);
  // the MLP's down projection: [8944, 2816] x [2816, 1024], 2 m n k FLOPs
  bool down = false;
  for (const TraceOp& o : t.ops)
    if (o.kind == TraceOpKind::gemm && o.k == 2816) {
      EXPECT_EQ(o.m, 16 * 559);
      EXPECT_EQ(o.n, 1024);
      EXPECT_DOUBLE_EQ(o.flops, 51581550592.0);
      down = true;
    }
  EXPECT_TRUE(down);
  const TraceOp* attention = first_of(t, "aten::_flash_attention_forward");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->heads, 16);  // q as flash takes it: [batch, seq, heads, head_dim] = [16, 559, 16, 64]
  EXPECT_EQ(attention->seq_kv, 559);
  EXPECT_EQ(attention->head_dim, 64);
  EXPECT_DOUBLE_EQ(attention->flops, 20478754816.0);  // 4 b h s s_k d
  // RMSNorm's square of the fp32 hidden states: [16, 559, 1024] floats read, as many written
  const TraceOp* square = first_of(t, "aten::pow");
  ASSERT_NE(square, nullptr);
  EXPECT_EQ(square->kind, TraceOpKind::memory);
  EXPECT_DOUBLE_EQ(square->bytes, 73269248.0);
  EXPECT_EQ(square->family, "elementwise");
}

TEST(TraceOps, KernelsFindTheirOpThroughTheLaunchAndOnlyStepKernelsCount) {
  const nlohmann::json trace = nlohmann::json::parse(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 100, "dur": 5, "args": {"External id": 7,
     "Input Dims": [[256, 512], [512, 128]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 101, "dur": 2, "args": {"External id": 7, "correlation": 70}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "ts": 110, "dur": 5, "args": {"External id": 8,
     "Input Dims": [[[4, 8], [4, 8]], []], "Input type": ["TensorList", "Scalar"]}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "ts": 150, "dur": 100, "args": {}},
    {"ph": "X", "cat": "kernel", "name": "before the step", "ts": 120, "dur": 10, "args": {"device": 0, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm", "ts": 160, "dur": 20, "args": {"device": 0, "correlation": 70}},
    {"ph": "X", "cat": "kernel", "name": "CatArrayBatchedCopy", "ts": 190, "dur": 4, "args": {"device": 0, "External id": 8}}
  ]})");
  const TraceOps t = read_trace_ops(trace, "made up");
  ASSERT_EQ(t.ops.size(), 2u);  // the kernel before the step's annotation is left out
  EXPECT_EQ(t.ops[0].op, "aten::mm");  // no External id of its own: its launch's
  EXPECT_DOUBLE_EQ(t.ops[0].flops, 2.0 * 256 * 512 * 128);
  EXPECT_EQ(t.ops[1].family, "cat");
  EXPECT_DOUBLE_EQ(t.ops[1].bytes, 2 * (2 * 32 * 2.0));  // two 4 x 8 read at 2 bytes (a list: unknown type), as many written
  EXPECT_DOUBLE_EQ(t.step_s, 100e-6);
  EXPECT_DOUBLE_EQ(t.kernel_s(), 24e-6);
}

TEST(TraceOps, KernelFamilies) {
  EXPECT_EQ(kernel_family("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"), "elementwise");
  EXPECT_EQ(kernel_family("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<...>>"), "strided");
  EXPECT_EQ(kernel_family("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"), "reduce");
  EXPECT_EQ(kernel_family("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"), "softmax");
  EXPECT_EQ(kernel_family("sm90_xmma_gemm_bf16bf16"), "other");
}

TEST(TraceOps, NotATraceIsRefusedByName) {
  EXPECT_THROW(read_trace_ops(nlohmann::json::object(), "x.json"), std::invalid_argument);
  EXPECT_THROW(read_trace_ops(nlohmann::json::parse(R"({"traceEvents": []})"), "x.json"), std::invalid_argument);
}

}  // namespace
}  // namespace twinsim::compare
