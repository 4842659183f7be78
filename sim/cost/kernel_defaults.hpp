#pragma once
// Published kernel efficiencies of catalog GPUs, used where the GPU description gives
// none (an empty gemm_efficiency curve, sms = 0). Each figure carries its source.
#include <string_view>
#include <vector>

#include "hardware/gpu_spec.hpp"

namespace twinsim {

struct KernelDefaults {
  int sms = 0;                                // streaming multiprocessors (datasheet)
  std::vector<EfficiencyPoint> gemm;          // fraction of dense peak by GEMM FLOPs
  double attention_fwd = 0;                   // flash-attention fraction of dense peak
  double attention_bwd = 0;
};

// Defaults for a GPU by catalog name ("a100-sxm-80gb", "h100-sxm", ...); nullptr if unknown.
const KernelDefaults* kernel_defaults(std::string_view gpu_name);

}  // namespace twinsim
