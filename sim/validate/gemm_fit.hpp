#pragma once
// From measured GEMM throughput to a GPU's gemm_efficiency curve, and back to errors:
// the documented procedure (hardware/catalog/README.md, "Fitting a GPU's GEMM curve")
// that writes the catalog's curves and judges them on the shapes it did not see.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/gpu_spec.hpp"
#include "sim/cost/compute_cost.hpp"
#include "sim/validate/error_stats.hpp"

namespace twinsim {

// One measured GEMM: `batch` independent [m,k] x [k,n] products in one kernel.
struct MeasuredGemm {
  int index = 0;        // 0-based row among those of its device and dtype: even/odd split on it
  int source = 0;       // which of the files read together it came from
  std::string device;   // as the source names it
  Dtype dtype = Dtype::bf16;
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  // the shape as cuBLAS takes it, column-major (C m x n = A m x k B k x n: leading
  // dimensions m and k), where the simulator's ops are PyTorch's row-major (n and k): the
  // `gpu,dtype,m,n,k,tflops` rows of cuBLAS benchmarks (Azure's cuBLASLt runs) are, this
  // repo's F.linear rows (with a `layer` column) and XLA's are not
  bool column_major = false;
  double tflops = 0;    // 2 batch m n k / time / 1e12
  double flops() const { return 2.0 * batch * m * n * k; }
  bool square() const { return m == n && n == k && batch == 1; }
};

// How the source timed its GEMMs: kernel time on the device (XLA's perf table: no launch
// in it) or the host's wall time per call in a loop (cuBLASLt benchmarks: one launch each).
enum class GemmTiming { kernel, wall };

// Reads a CSV with either column set: `gpu,dtype,m,n,k,tflops` (dtype fp16|bf16|fp8|tf32)
// or XLA's `xla_device_key,batch,m,n,k,xla_dtype_key,flop_per_s` (bf16xbf16->bf16 is
// bf16, f32xf32->f32 runs on Tensor Cores and is tf32, f8e4m3fnxf8e4m3fn->bf16 is fp8;
// rows of other dtype keys are skipped). Keeps the rows whose device contains `device`
// (all when empty) and whose dtype is `dtype`. A malformed line throws std::runtime_error
// naming the file, the line and the column.
std::vector<MeasuredGemm> read_gemm_csv(const std::string& path, const std::string& device, Dtype dtype);

// Several measured sources pooled (each keeps its own row indices, so even/odd splits
// each file alike): `devices` empty (every row), one text for all files, or one per file.
std::vector<MeasuredGemm> read_gemm_csvs(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& devices, Dtype dtype);

// The simulator's op for a measured shape: the batch stacks along m, which moves no tile
// edge since every measured m is a multiple of the 128-row tile.
ComputeOp measured_op(const MeasuredGemm& g);

// The simulator's time for a measured shape over the measured time, minus one (> 0: the
// simulator is slow). Kernel timing compares the kernel alone, wall timing adds a launch.
double gemm_time_error(const GpuSpec& gpu, const MeasuredGemm& g, GemmTiming timing);

// A curve that makes the simulator reproduce `rows`: each row's measured fraction of the
// dense peak (wall timing: after one kernel_launch) divided by the simulator's shape factor
// (wave utilisation and alignment, gemm_shape_factor); rows within a factor of two in
// FLOPs (rounded log2) share one point, their median, placed at their median FLOPs.
std::vector<EfficiencyPoint> fit_gemm_curve(const GpuSpec& gpu, const std::vector<MeasuredGemm>& rows,
                                            GemmTiming timing);

// Where the catalog keeps a fitted curve: 16-bit GEMMs in gemm_efficiency (every pass and
// every math type without its own), any other type under gemm_efficiency_by_dtype.
bool has_own_gemm_curve(Dtype d);
std::vector<EfficiencyPoint>& catalog_gemm_curve(GpuSpec& gpu, Dtype d);

// Which rows a fit uses: even or odd row indices (the others judge it), square shapes
// (the rest judge), or all rows (nothing held out).
enum class GemmFitRows { even, odd, squares, all };
bool is_fit_row(const MeasuredGemm& g, GemmFitRows which);

struct GemmFitReport {
  std::vector<EfficiencyPoint> curve;
  ErrorSummary fit, held_out;       // the fitted curve's time errors
  ErrorSummary fit_before, held_out_before;  // the GPU's curve before the fit, same rows
  // the held-out rows of each source (MeasuredGemm::source) apart, before and after
  std::vector<ErrorSummary> held_out_by_source, held_out_before_by_source;
};

// Fits `gpu`'s curve for the rows' dtype on the `which` rows and judges both halves
// (every row of every source), before and after.
GemmFitReport fit_and_judge(const GpuSpec& gpu, const std::vector<MeasuredGemm>& rows, GemmTiming timing,
                            GemmFitRows which);

}  // namespace twinsim
