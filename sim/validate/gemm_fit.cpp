#include "sim/validate/gemm_fit.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include "sim/common/csv.hpp"
#include "sim/cost/compute_cost.hpp"

namespace twinsim {

namespace {

// XLA's dtype keys (xla/service/gpu/model/default_matmul_perf_table.txtpb); false: a key
// twinsim has no math type for (fp8 with an e5m2 operand).
bool xla_dtype(const std::string& key, Dtype& out) {
  if (key == "bf16xbf16->bf16") out = Dtype::bf16;
  else if (key == "f32xf32->f32") out = Dtype::tf32;  // > the fp32 CUDA-core peak: Tensor Cores
  else if (key == "f8e4m3fnxf8e4m3fn->bf16") out = Dtype::fp8;
  else return false;
  return true;
}

// The column named `name`, or -1.
int column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

double number(const std::vector<std::string>& cells, int col, const std::string& where) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(cells.at(col), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != cells.at(col).size() || !std::isfinite(v) || v <= 0)
    throw std::runtime_error(where + ": '" + cells.at(col) + "' is not a positive number");
  return v;
}

// A GEMM's batch or edge: a whole number up to 2^31 (a larger double converted to an
// integer is undefined behaviour; found by tests/fuzz/fuzz_csv.cpp).
std::int64_t dimension(const std::vector<std::string>& cells, int col, const std::string& where) {
  const double v = number(cells, col, where);
  if (v > 2147483648.0 || v != std::floor(v))
    throw std::runtime_error(where + ": '" + cells.at(col) + "' is not a whole number from 1 to 2147483648 (2^31)");
  return static_cast<std::int64_t>(v);
}

}  // namespace

// The simulator's op for a measured shape: the batch stacks along m, which moves no tile
// edge since every measured m is a multiple of the 128-row tile.
ComputeOp measured_op(const MeasuredGemm& g) {
  // column-major C = A B is row-major C^T = B^T A^T: m and n trade places
  ComputeOp op = g.column_major ? gemm_op(g.dtype, g.batch * g.n, g.m, g.k) : gemm_op(g.dtype, g.batch * g.m, g.n, g.k);
  op.flops = g.flops();
  op.bytes = static_cast<double>(dtype_bytes(g.dtype, g.batch * (g.m * g.k + g.k * g.n + g.m * g.n)));
  return op;
}


std::vector<MeasuredGemm> read_gemm_csv(const std::string& path, const std::string& device, Dtype dtype) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv_line(line);
  const bool xla = column(header, "xla_dtype_key") >= 0;
  const int c_device = column(header, xla ? "xla_device_key" : "gpu");
  const int c_dtype = column(header, xla ? "xla_dtype_key" : "dtype");
  const int c_rate = column(header, xla ? "flop_per_s" : "tflops");
  const int c_batch = column(header, "batch");
  const int c_m = column(header, "m"), c_n = column(header, "n"), c_k = column(header, "k");
  const bool column_major = !xla && column(header, "layer") < 0;  // MeasuredGemm::column_major
  if (std::min({c_device, c_dtype, c_rate, c_m, c_n, c_k}) < 0)
    throw std::runtime_error(path + ": the header needs gpu,dtype,m,n,k,tflops or "
                             "xla_device_key,batch,m,n,k,xla_dtype_key,flop_per_s");
  std::vector<MeasuredGemm> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_csv_line(line);
    const std::string where = path + ":" + std::to_string(line_no);
    if (cells.size() != header.size())
      throw std::runtime_error(where + ": " + std::to_string(cells.size()) + " columns, the header has " +
                               std::to_string(header.size()));
    MeasuredGemm g;
    g.device = cells[c_device];
    const bool known = xla ? xla_dtype(cells[c_dtype], g.dtype) : parse_dtype(cells[c_dtype], g.dtype);
    if (!known && !xla) throw std::runtime_error(where + ": dtype '" + cells[c_dtype] + "' is not a math type");
    if (!known || g.dtype != dtype || g.device.find(device) == std::string::npos) continue;
    g.batch = c_batch >= 0 ? dimension(cells, c_batch, where + " batch") : 1;
    g.m = dimension(cells, c_m, where + " m");
    g.n = dimension(cells, c_n, where + " n");
    g.k = dimension(cells, c_k, where + " k");
    g.tflops = number(cells, c_rate, where + (xla ? " flop_per_s" : " tflops")) / (xla ? 1e12 : 1.0);
    g.column_major = column_major;
    g.index = static_cast<int>(rows.size());
    rows.push_back(g);
  }
  return rows;
}

std::vector<MeasuredGemm> read_gemm_csvs(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& devices, Dtype dtype) {
  if (devices.size() > 1 && devices.size() != paths.size())
    throw std::runtime_error(std::to_string(devices.size()) + " device filters for " + std::to_string(paths.size()) +
                             " files: give one for all files or one per file");
  std::vector<MeasuredGemm> rows;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string device = devices.empty() ? "" : devices.size() == 1 ? devices[0] : devices[i];
    for (MeasuredGemm g : read_gemm_csv(paths[i], device, dtype)) {
      g.source = static_cast<int>(i);
      rows.push_back(g);
    }
  }
  return rows;
}

double gemm_time_error(const GpuSpec& gpu, const MeasuredGemm& g, GemmTiming timing) {
  const ComputeCost c = gemm_cost(gpu, measured_op(g));
  const double predicted_s = timing == GemmTiming::wall ? c.time_s() : c.time_s() - c.launch_s;
  return predicted_s / (g.flops() / (g.tflops * 1e12)) - 1;
}

std::vector<EfficiencyPoint> fit_gemm_curve(const GpuSpec& gpu, const std::vector<MeasuredGemm>& rows,
                                            GemmTiming timing) {
  std::map<int, std::vector<const MeasuredGemm*>> by_octave;
  for (const MeasuredGemm& g : rows) by_octave[static_cast<int>(std::lround(std::log2(g.flops())))].push_back(&g);
  std::vector<EfficiencyPoint> curve;
  for (const auto& [octave, members] : by_octave) {
    std::vector<double> flops, points;
    for (const MeasuredGemm* g : members) {
      const ComputeOp op = measured_op(*g);
      const double kernel_s = g->flops() / (g->tflops * 1e12) - (timing == GemmTiming::wall ? gpu.kernel_launch_s : 0);
      const double achieved = g->flops() / kernel_s / gpu.peak(g->dtype);
      flops.push_back(g->flops());
      points.push_back(achieved / gemm_shape_factor(gpu, op.m, op.n, op.k, op.pass, op.dtype));
    }
    // a point above the peak is a shape the wave model under-rates; the curve holds at 1
    curve.push_back({percentile(flops, 0.5), std::min(1.0, percentile(points, 0.5))});
  }
  return curve;
}

bool has_own_gemm_curve(Dtype d) { return d != Dtype::bf16 && d != Dtype::fp16; }

std::vector<EfficiencyPoint>& catalog_gemm_curve(GpuSpec& gpu, Dtype d) {
  return has_own_gemm_curve(d) ? gpu.gemm_efficiency_by_dtype[d] : gpu.gemm_efficiency;
}

bool is_fit_row(const MeasuredGemm& g, GemmFitRows which) {
  switch (which) {
    case GemmFitRows::even: return g.index % 2 == 0;
    case GemmFitRows::odd: return g.index % 2 == 1;
    case GemmFitRows::squares: return g.square();
    case GemmFitRows::all: return true;
  }
  return true;
}

GemmFitReport fit_and_judge(const GpuSpec& gpu, const std::vector<MeasuredGemm>& rows, GemmTiming timing,
                            GemmFitRows which) {
  if (rows.empty()) throw std::runtime_error("no measured GEMMs to fit");
  std::vector<MeasuredGemm> fit_rows;
  for (const MeasuredGemm& g : rows)
    if (is_fit_row(g, which)) fit_rows.push_back(g);
  if (fit_rows.empty()) throw std::runtime_error("none of the measured GEMMs is a fit row");
  GemmFitReport report;
  report.curve = fit_gemm_curve(gpu, fit_rows, timing);
  GpuSpec fitted = gpu;
  catalog_gemm_curve(fitted, rows.front().dtype) = report.curve;
  int sources = 0;
  for (const MeasuredGemm& g : rows) sources = std::max(sources, g.source + 1);
  std::vector<double> fit, held, fit_before, held_before;
  std::vector<std::vector<double>> held_by(sources), held_before_by(sources);
  for (const MeasuredGemm& g : rows) {
    const bool in_fit = is_fit_row(g, which);
    const double after = gemm_time_error(fitted, g, timing), before = gemm_time_error(gpu, g, timing);
    (in_fit ? fit : held).push_back(after);
    (in_fit ? fit_before : held_before).push_back(before);
    if (!in_fit) held_by[g.source].push_back(after), held_before_by[g.source].push_back(before);
  }
  report.fit = summarize(fit);
  report.fit_before = summarize(fit_before);
  if (!held.empty()) report.held_out = summarize(held), report.held_out_before = summarize(held_before);
  for (int s = 0; s < sources; ++s) {
    report.held_out_by_source.push_back(held_by[s].empty() ? ErrorSummary{} : summarize(held_by[s]));
    report.held_out_before_by_source.push_back(held_before_by[s].empty() ? ErrorSummary{} : summarize(held_before_by[s]));
  }
  return report;
}

}  // namespace twinsim
