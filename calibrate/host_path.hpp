#pragma once
// ZeRO-Offload's host side as this machine runs it (plan.offload_optimizer; exec/train/zero.cpp
// offloaded_update): each shard's reduced gradients copied to host memory, the CPU's AdamW
// over the shard's fp32 weights and moments, the weights copied back. On a CPU host the
// "device" and the host are one DRAM: the copies are memcpy between buffers the step last
// touched a step ago (out of cache), the update the executor's own AdamW. Fitted into the
// cluster's `host: {h2d_GBps, d2h_GBps, adam_ns_per_param}` (hardware/cluster_spec.hpp HostSpec).
#include <vector>

#include "calibrate/compute_bench.hpp"

namespace twinsim::calibrate {

// The memory sweep's points of the out-of-cache copy (bytes: read plus written, as "copy").
inline constexpr const char* kHostCopyKernel = "host_copy";

// memcpy of `n` floats from and to buffers rotated out of cache, as the offload's copies find
// a shard's gradients and weights: one "host_copy" MemoryPoint.
void add_host_copy_points(std::vector<MemoryPoint>& out, long n, const SweepOptions& o);

struct HostPathFit {
  double copy_Bps = 0;          // bytes moved a second, one direction (a PCIe link's sense)
  double adam_s_per_param = 0;  // the CPU AdamW's time per fp32 parameter, its state out of cache
};

// copy_Bps: the median over the "host_copy" points of the bytes moved (half of read plus
// written) over the time; adam_s_per_param: the median over the fp32 "adamw" points (28
// bytes a parameter, compute_bench.cpp) of the time per parameter. 0 where none was measured.
HostPathFit fit_host_path(const std::vector<MemoryPoint>& points);

}  // namespace twinsim::calibrate
