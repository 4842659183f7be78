#include "sim/validate/calibration.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "sim/cost/compute_cost.hpp"

namespace twinsim {

namespace {

double logit(double p) { return std::log(p / (1 - p)); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

Calibration calibration_of(const ClusterSpec& cluster) {
  Calibration c;
  const GpuSpec& gpu = cluster.gpu;
  // gemm_efficiency with shape 0 gives the curve alone (the catalog default when empty)
  for (double size : kCalibrationGemmSizes) c.gemm_efficiency.push_back(gemm_efficiency(gpu, size, 0, 0, 0));
  c.memory_efficiency = gpu.memory_efficiency;
  c.kernel_launch_s = gpu.kernel_launch_s;
  c.nvlink_efficiency = cluster.intra_node.efficiency.empty() ? 0.80 : cluster.intra_node.efficiency.back().efficiency;
  c.nvlink_latency_s = cluster.intra_node.latency_s;
  return c;
}

void apply(const Calibration& c, ClusterSpec& cluster) {
  GpuSpec& gpu = cluster.gpu;
  gpu.gemm_efficiency.clear();
  for (std::size_t i = 0; i < c.gemm_efficiency.size(); ++i)
    gpu.gemm_efficiency.push_back({kCalibrationGemmSizes[i], c.gemm_efficiency[i]});
  gpu.memory_efficiency = c.memory_efficiency;
  gpu.kernel_launch_s = c.kernel_launch_s;
  cluster.intra_node.efficiency = {{1.0, c.nvlink_efficiency}};
  cluster.intra_node.latency_s = c.nvlink_latency_s;
}

std::vector<double> to_vector(const Calibration& c) {
  std::vector<double> x;
  for (double e : c.gemm_efficiency) x.push_back(logit(e));
  x.push_back(logit(c.memory_efficiency));
  x.push_back(std::log(c.kernel_launch_s * 1e6));
  x.push_back(logit(c.nvlink_efficiency));
  x.push_back(std::log(c.nvlink_latency_s * 1e6));
  return x;
}

Calibration from_vector(const std::vector<double>& x) {
  Calibration c;
  const std::size_t g = kCalibrationGemmSizes.size();
  c.gemm_efficiency.clear();
  for (std::size_t i = 0; i < g; ++i) c.gemm_efficiency.push_back(sigmoid(x[i]));
  c.memory_efficiency = sigmoid(x[g]);
  c.kernel_launch_s = std::exp(x[g + 1]) * 1e-6;
  c.nvlink_efficiency = sigmoid(x[g + 2]);
  c.nvlink_latency_s = std::exp(x[g + 3]) * 1e-6;
  return c;
}

std::string calibration_node_yaml(const Calibration& c, const ClusterSpec& base, const std::string& gpu_preset,
                                  const std::string& comment) {
  std::ostringstream y;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) y << "# " << line << "\n";
  y << std::setprecision(4);
  y << "gpu:\n  preset: " << gpu_preset << "\n  gemm_efficiency: [";
  for (std::size_t i = 0; i < c.gemm_efficiency.size(); ++i)
    y << (i ? ", " : "") << "[" << kCalibrationGemmSizes[i] << ", " << c.gemm_efficiency[i] << "]";
  y << "]   # fitted: [GEMM FLOPs, fraction of dense peak]\n";
  y << "  memory_efficiency: " << c.memory_efficiency << "   # fitted\n";
  y << "  kernel_launch_us: " << c.kernel_launch_s * 1e6 << "   # fitted\n";
  y << "gpus_per_node: " << base.gpus_per_node << "\n";
  y << "intra_node: {bandwidth_GBps: " << base.intra_node.bandwidth_Bps / 1e9 << ", latency_us: "
    << c.nvlink_latency_s * 1e6 << ", efficiency: [[1, " << c.nvlink_efficiency << "]]}   # latency, efficiency fitted\n";
  y << "inter_node: {bandwidth_GBps: " << base.inter_node.bandwidth_Bps / 1e9 << ", nics_per_node: " << base.nics_per_node
    << ", latency_us: " << base.inter_node.latency_s * 1e6 << "}\n";
  return y.str();
}

}  // namespace twinsim
