#pragma once
// Eigen views of one head of a [batch, seq, heads, head_dim] tensor: a [rows, head_dim]
// row-major matrix whose rows are heads * head_dim floats apart. Private to kernels/cpu.
#include <Eigen/Core>

namespace twinsim::kernels::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using HeadView = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstHeadView = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

inline ConstHeadView head_rows(const float* base, long row_stride, int first, int rows, int dim) {
  return ConstHeadView(base + first * row_stride, rows, dim, Eigen::OuterStride<>(row_stride));
}

inline HeadView head_rows(float* base, long row_stride, int first, int rows, int dim) {
  return HeadView(base + first * row_stride, rows, dim, Eigen::OuterStride<>(row_stride));
}

}  // namespace twinsim::kernels::cpu
