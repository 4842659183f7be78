// Flash attention on the GPU against the CPU flash kernel (itself tested against the
// plain quadratic attention in tests/unit/kernels) on the same random inputs, with
// sequence lengths and head sizes that leave partial tiles on every side.
#ifdef TWINSIM_HAVE_CUDA
#include <sstream>

#include "kernels/cpu/flash_attention.hpp"
#include "kernels/cuda/flash_attention.hpp"
#include "tests/unit/cuda/cuda_test_util.hpp"

namespace twinsim::kernels {
// Test names and failure messages show the shape, not its bytes (found by ADL).
inline void PrintTo(const AttentionShape& s, std::ostream* os) {
  *os << "{batch " << s.batch << ", seq " << s.seq << ", heads " << s.heads << ", kv_heads " << s.kv_heads
      << ", head_dim " << s.head_dim << "}";
}
}  // namespace twinsim::kernels

namespace twinsim::cuda_testing {
namespace {

namespace cpu = kernels::cpu;
namespace gpu = kernels::cuda;
using kernels::AttentionShape;

class CudaFlashAttention : public GpuTest, public ::testing::WithParamInterface<AttentionShape> {};

TEST_P(CudaFlashAttention, ForwardAndBackwardMatchCpu) {
  const AttentionShape s = GetParam();
  const long q_size = static_cast<long>(s.batch) * s.seq * s.heads * s.head_dim;
  const long kv_size = static_cast<long>(s.batch) * s.seq * s.kv_heads * s.head_dim;
  const long stat_size = static_cast<long>(s.batch) * s.heads * s.seq;
  auto q = random_vector(q_size, 1), k = random_vector(kv_size, 2), v = random_vector(kv_size, 3);
  auto dout = random_vector(q_size, 4);
  std::vector<float> out(q_size), lse(stat_size), dq(q_size), dk(kv_size), dv(kv_size);
  DeviceFloats d_q(q), d_k(k), d_v(v), d_dout(dout), d_out(out), d_lse(lse), d_dq(dq), d_dk(dk), d_dv(dv);

  gpu::flash_attention_forward(d_q.get(), d_k.get(), d_v.get(), d_out.get(), d_lse.get(), s);
  gpu::flash_attention_backward(d_q.get(), d_k.get(), d_v.get(), d_out.get(), d_lse.get(), d_dout.get(),
                                d_dq.get(), d_dk.get(), d_dv.get(), s);
  cpu::flash_attention_forward(q.data(), k.data(), v.data(), out.data(), lse.data(), s);
  cpu::flash_attention_backward(q.data(), k.data(), v.data(), out.data(), lse.data(), dout.data(),
                                dq.data(), dk.data(), dv.data(), s);

  expect_all_near(d_out.to_host(), out, kFp32ReduceTol, kFp32ReduceTol, "out");
  expect_all_near(d_lse.to_host(), lse, kFp32ReduceTol, kFp32ReduceTol, "logsumexp");
  expect_all_near(d_dq.to_host(), dq, kFp32ReduceTol, kFp32ReduceTol, "dq");
  expect_all_near(d_dk.to_host(), dk, kFp32ReduceTol, kFp32ReduceTol, "dk");
  expect_all_near(d_dv.to_host(), dv, kFp32ReduceTol, kFp32ReduceTol, "dv");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaFlashAttention,
    ::testing::Values(AttentionShape{2, 77, 4, 2, 40},   // GQA groups of 2, head_dim < 32 lanes x 2
                      AttentionShape{1, 65, 2, 1, 128},  // multi-query, the largest head_dim
                      AttentionShape{1, 1, 3, 3, 8},     // one token: attends to itself only
                      AttentionShape{3, 33, 2, 2, 64}),  // multi-head, one row past a tile
    [](const ::testing::TestParamInfo<AttentionShape>& info) {
      const AttentionShape& s = info.param;
      std::ostringstream name;
      name << "b" << s.batch << "_s" << s.seq << "_h" << s.heads << "_kv" << s.kv_heads << "_d" << s.head_dim;
      return name.str();
    });

}  // namespace
}  // namespace twinsim::cuda_testing
#endif
