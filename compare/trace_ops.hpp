#pragma once
// The kernels of a PyTorch profiler trace recorded with shapes (`record_shapes=True`), each
// sized by the ATen op that launched it: what `twinsim calibrate --from-trace` fits the GPU's
// figures to, and what a calibration is judged on (issue 55).
//
// A kernel's op is the cpu_op whose "External id" the kernel carries (Kineto links a launch to
// the innermost op running on the host then; a kernel without one is found through its
// cuda_runtime launch's correlation). Sizes come from the op's "Input Dims" and "Input type":
// * GEMM: aten::mm [M,K] x [K,N], aten::addmm (bias, [M,K], [K,N]), aten::bmm and
//   aten::baddbmm ([B,M,K] x [B,K,N]): 2 B M N K FLOPs;
// * fused attention: aten::_flash_attention_forward / _scaled_dot_product_flash_attention /
//   _efficient_attention_forward / _scaled_dot_product_efficient_attention /
//   _scaled_dot_product_cudnn_attention: 4 b h s s_k d FLOPs (the simulator's full-square
//   count), q as [b, s, h, d] (flash's layout) or [b, h, s, d] (the sdpa entry points);
// * memory-bound: any other op whose inputs are tensors: the bytes of its tensor inputs
//   read plus what it writes: an element-wise op its largest input (its output is the
//   broadcast of its inputs; copy_ and the in-place ops count their destination as an
//   input), a concatenation all it read, a reduction nothing to speak of; gathers (index
//   kernels) stay unsized: they read the rows their indices pick;
// * unsized: no op, or an op with no tensor input, or a GEMM whose dims do not parse.
// Only the kernels of the busiest device inside the GPU's ProfilerStep annotations (the whole
// trace when it has none) are kept: a trace's first kernels may belong to a step the profiler
// did not record the host side of.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace twinsim::compare {

enum class TraceOpKind { gemm, attention, memory, unsized };
const char* to_string(TraceOpKind kind);

struct TraceOp {
  std::string kernel;           // the kernel's name
  std::string op;               // the ATen op that launched it ("" when none was found)
  TraceOpKind kind = TraceOpKind::unsized;
  std::string dtype;            // the op's first input's type as the trace writes it ("c10::BFloat16")
  std::int64_t batch = 1, m = 0, n = 0, k = 0;  // gemm
  std::int64_t heads = 0, seq = 0, seq_kv = 0, head_dim = 0;  // attention (batch too)
  double flops = 0;             // gemm, attention
  double bytes = 0;             // memory
  std::string family;           // memory: kernel_family(kernel)
  double dur_s = 0;
};

struct TraceOps {
  std::string origin;
  std::string gpu_name;         // deviceProperties' name
  int steps = 0;                // GPU ProfilerStep annotations (0: none, the whole trace)
  double step_s = 0;            // their mean duration; without steps, the kernels' span
  std::vector<TraceOp> ops;     // in launch order
  double kernel_s(TraceOpKind kind) const;  // total over `ops` of one kind, per step
  double kernel_s() const;                  // all kinds, per step
};

// Throws std::invalid_argument naming `origin` when the JSON is not a trace with kernels.
TraceOps read_trace_ops(const nlohmann::json& trace, const std::string& origin);

// Which of PyTorch's memory-bound kernel templates a kernel is: they stream at different
// rates (vectorized_elementwise_kernel on contiguous operands of one type; elementwise_kernel,
// the generic one, computes every operand's offset on broadcast, strided or mixed-type
// operands; reductions, concatenation, softmax and norms have their own). "elementwise" for
// the vectorized and unrolled element-wise ones, "strided" for the generic one, then
// "reduce", "cat", "softmax", "norm", "index", "other".
std::string kernel_family(const std::string& kernel);

// Bytes of one element of a type as the trace writes it ("c10::BFloat16" 2, "float" 4, ...);
// 0 for a type it does not know.
int trace_type_bytes(const std::string& type);

}  // namespace twinsim::compare
