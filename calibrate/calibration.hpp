#pragma once
// Everything one `twinsim calibrate` measured and fitted, and the hardware file it writes:
// a node mapping of hardware/catalog/README.md with an inline `gpu:` mapping, so it can
// stand as a scenario's whole `cluster:` mapping (SCENARIO.md, inline cluster).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "calibrate/cache_reuse.hpp"
#include "calibrate/comm_bench.hpp"
#include "calibrate/compute_bench.hpp"
#include "calibrate/core_sharing.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/host_path.hpp"
#include "calibrate/op_host.hpp"

namespace twinsim::calibrate {

struct Calibration {
  std::vector<GemmPoint> gemm;
  std::vector<MemoryPoint> memory;
  std::vector<AttentionPoint> attention;
  std::vector<CommPoint> comm;  // every rank count measured; the link is fitted on `link_ranks`
  int link_ranks = 2;
  double comm_evict_MiB = 0;  // what every rank wrote before each timed collective
  Stats straggler;  // max / mean - 1 of `link_ranks` ranks' times on the same work (comm_bench)
  CoreSharing sharing;  // the kernels alone against beside busy cores (core_sharing.hpp)
  Stats op_host;        // the executor's host time per op, seconds (op_host.hpp); none: 0
  double memory_GiB = 0;        // the machine's RAM: all ranks share it
  double cache_MiB = 0;         // the last-level cache (L3) sysfs reports, shared by the cores
  int reuse_ranks = 0;          // processes that ran the reuse sweep at once (0: it did not run)
  std::string machine;          // CPU model, cores, load average: for the file's header
  std::string cpu_model;        // recorded as `# cpu_model:` (calibrate/machine.hpp reads it back)
  std::string cpu_layout;       // recorded as `# cpu_layout:` (calibrate/machine.hpp cpu_layout)
};

struct Fitted {
  MemoryFit memory;
  GemmFit gemm;
  AttentionFit attention;
  std::map<int, AttentionFit> attention_by_head_dim;  // empty unless two widths or more were measured
  std::vector<CurvePoint> kv_attention;  // the serving kernel over a KV cache, by FLOPs
  std::map<std::string, KernelCurves> kernels;
  std::map<std::string, KernelCurves> kernels_16bit;  // the same kernels on bf16 data
  LinkFit link;
  HostPathFit host;  // the offloaded optimizer's copies and CPU AdamW (the file's `host:`)
  // the file's cache_MiB: the working set a decode's GEMMs still found warm (cache_reuse.hpp),
  // at most the sysfs L3; the sysfs L3 where the reuse sweep did not run
  double cache_bytes = 0;
  // the file's gemm_reuse_time: each working set's time over the cold one's (cache_reuse.hpp)
  std::vector<CurvePoint> reuse_time;
  // the file's gemm_reuse_time_alone: the same from the sweep with no other process running
  std::vector<CurvePoint> reuse_time_alone;
  // the file's gemm_rows_time: the reuse GEMM's time by rows over its 4-row time (cache_reuse.hpp)
  std::vector<CurvePoint> rows_time;
};

Fitted fit_all(const Calibration& c);

// The YAML text of hardware/calibrated/NAME.yaml; spreads and raw medians as comments
// (the loader rejects unknown keys).
std::string hardware_yaml(const Calibration& c, const Fitted& f, const std::string& name);

// Raw points, for the record (written beside the YAML as NAME.json) and for tests.
nlohmann::json points_json(const Calibration& c);
std::vector<CommPoint> comm_points_from_json(const nlohmann::json& j);
// {median_s, mean_s, min_s, max_s, repeats}
nlohmann::json stats_json(const Stats& s);
Stats stats_from(const nlohmann::json& j);
nlohmann::json comm_points_json(const std::vector<CommPoint>& points);

// One rank of the communicator sweep under mpirun (comm_sweep, then straggler_sweep):
// rank 0 writes {points, straggler} to `out_json`, which the calibrating process reads
// back (comm_points_from_json, stats_from).
void comm_sweep_as_rank(const CommSweepOptions& o, int repeats, const std::string& out_json);

}  // namespace twinsim::calibrate
