#pragma once
// The few efficiency figures a calibration fits, how they map onto a cluster
// description, and how they are written out as a node type for the catalog.
#include <string>
#include <vector>

#include "hardware/cluster_spec.hpp"

namespace twinsim {

// GEMM sizes (FLOPs) at which the fitted GEMM efficiency curve has a point, a decade
// apart: the vTrain runs' GEMMs span ~4e8 (h 1024, one sequence, TP 8) to ~3e11 FLOPs
// (h 2048, eight sequences); the curve holds its end values beyond.
inline const std::vector<double> kCalibrationGemmSizes{1e8, 1e9, 1e10, 1e11};

struct Calibration {
  std::vector<double> gemm_efficiency;  // at kCalibrationGemmSizes, fraction of dense peak
  double memory_efficiency = 0.85;      // fraction of HBM peak for memory-bound kernels
  double kernel_launch_s = 4e-6;        // per kernel (and per collective launch)
  double nvlink_efficiency = 0.8;       // fraction of NVLink line rate NCCL reaches
  double nvlink_latency_s = 3e-6;       // per ring step inside the node (Simple protocol)
};

// Reads a calibration back from a cluster (its GEMM curve sampled at the fitted sizes).
Calibration calibration_of(const ClusterSpec& cluster);
void apply(const Calibration& c, ClusterSpec& cluster);

// The unconstrained vector the optimizer moves in: logit of each efficiency, log of
// each time in µs, so every vector maps to a valid calibration.
std::vector<double> to_vector(const Calibration& c);
Calibration from_vector(const std::vector<double>& x);

// A node type in the format of hardware/catalog/nodes: `base` with the calibration, its
// GPU written as `gpu_preset` plus the fitted figures; `comment` first, as '# ' lines.
std::string calibration_node_yaml(const Calibration& c, const ClusterSpec& base, const std::string& gpu_preset,
                                  const std::string& comment);

}  // namespace twinsim
