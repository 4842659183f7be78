#pragma once
// Views the CPU kernels compute on, private to kernels/cpu:
// * Eigen views of one head of a [batch, seq, heads, head_dim] tensor: a [rows, head_dim]
//   row-major matrix whose rows are heads * head_dim floats apart;
// * float staging of tensors stored as T (common/storage.hpp): RowsIn reads T rows as float,
//   RowsOut gives float rows to write or accumulate into and rounds them back once. For
//   T = float both are the tensor itself, so the fp32 path copies nothing.
#include <Eigen/Core>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/common/storage.hpp"

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

// rows x dim elements of a T tensor, row_stride apart, as float: for T = float the tensor
// itself, otherwise a contiguous copy (stride dim) in which each element was converted once
// with to_float. data()/stride() feed head_rows. Not copyable: data() may point into it.
template <class T>
class RowsIn {
 public:
  RowsIn(const T* base, long row_stride, long rows, long dim) {
    if constexpr (std::is_same_v<T, float>) {
      data_ = base;
      stride_ = row_stride;
    } else {
      copy_.resize(static_cast<std::size_t>(rows * dim));
      for (long r = 0; r < rows; ++r)
        for (long c = 0; c < dim; ++c) copy_[r * dim + c] = to_float(base[r * row_stride + c]);
      data_ = copy_.data();
      stride_ = dim;
    }
  }
  RowsIn(const RowsIn&) = delete;
  RowsIn& operator=(const RowsIn&) = delete;

  const float* data() const { return data_; }
  long stride() const { return stride_; }

 private:
  std::vector<float> copy_;
  const float* data_ = nullptr;
  long stride_ = 0;
};

// What RowsOut's float rows hold before the kernel writes them: anything (the kernel
// overwrites every element), zeros, or the stored values (accumulate = true).
enum class Start { any, zero, stored };

// rows x dim elements of a T tensor, row_stride apart, for a kernel to write or accumulate
// into in float: for T = float the tensor itself, otherwise float scratch that store()
// rounds into the tensor with from_float<T>, so every element is rounded exactly once
// however many times the kernel added to it. base may be nullptr (an absent optional
// output): then data() is nullptr and store() does nothing.
template <class T>
class RowsOut {
 public:
  RowsOut(T* base, long row_stride, long rows, long dim, Start start)
      : base_(base), base_stride_(row_stride), rows_(rows), dim_(dim) {
    if (base == nullptr) return;
    if constexpr (std::is_same_v<T, float>) {
      data_ = base;
      stride_ = row_stride;
      if (start == Start::zero)
        for (long r = 0; r < rows; ++r) std::fill_n(base + r * row_stride, dim, 0.0f);
    } else {
      scratch_.assign(static_cast<std::size_t>(rows * dim), 0.0f);
      if (start == Start::stored)
        for (long r = 0; r < rows; ++r)
          for (long c = 0; c < dim; ++c) scratch_[r * dim + c] = to_float(base[r * row_stride + c]);
      data_ = scratch_.data();
      stride_ = dim;
    }
  }
  // n contiguous elements (a parameter gradient, a bias).
  RowsOut(T* base, long n, Start start) : RowsOut(base, n, 1, n, start) {}
  RowsOut(const RowsOut&) = delete;
  RowsOut& operator=(const RowsOut&) = delete;

  float* data() { return data_; }
  long stride() const { return stride_; }

  void store() {
    if constexpr (!std::is_same_v<T, float>) {
      if (base_ == nullptr) return;
      for (long r = 0; r < rows_; ++r)
        for (long c = 0; c < dim_; ++c)
          base_[r * base_stride_ + c] = from_float<T>(scratch_[r * dim_ + c]);
    }
  }

 private:
  T* base_;
  long base_stride_, rows_, dim_;
  std::vector<float> scratch_;
  float* data_ = nullptr;
  long stride_ = 0;
};

}  // namespace twinsim::kernels::cpu
