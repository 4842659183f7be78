// `twinsim calibrate [--out hardware/calibrated/NAME.yaml] [--quick] [--ranks 2,4] [--compute-ranks N]`:
// microbenchmarks of the executor's kernels on this process (while N-1 others run them too) and of its MPI communicator
// on `mpirun -np R` ranks it starts itself, fitted into a hardware file the simulator
// reads (calibrate/calibration.hpp). NAME.json beside it keeps the raw points. By default it
// writes the host file that `cluster: host` stands for (app/host_calibration.hpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/child_process.hpp"
#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "app/executor_commands.hpp"
#include "app/host_calibration.hpp"
#include "app/progress.hpp"
#include "app/trace_calibration.hpp"
#include "calibrate/calibration.hpp"
#include "calibrate/compute_rounds.hpp"
#include "calibrate/machine.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct CalibrateArgs {
  std::string out = host_calibration_file().string();
  bool quick = false;
  std::vector<int> ranks{2, 4};
  int repeats = 7;
  int rounds = 3;  // the compute sweeps run this many times over; each point keeps its median round
  int compute_ranks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // written by every rank before each timed collective (calibrate/comm_bench.hpp)
  double comm_evict_MiB = calibrate::CommSweepOptions{}.evict_bytes / 1048576.0;
  std::string comm_only;  // internal: this process is one of the ranks; rank 0 writes here
  TraceCalibrationArgs from_trace;  // --from-trace: fit a catalog GPU to a real run's trace instead
};

struct CommRun {
  std::vector<calibrate::CommPoint> points;
  calibrate::Stats straggler;
};

CommRun spawn_comm(const CalibrateArgs& a, int ranks, const std::string& tmp, Progress& progress) {
  std::vector<std::string> argv = mpirun_argv(ranks);
  argv.insert(argv.end(), {self_executable().string(), "calibrate", "--comm-only", tmp, "--repeats",
                           std::to_string(a.repeats), "--comm-evict", std::to_string(a.comm_evict_MiB)});
  if (a.quick) argv.push_back("--quick");
  progress.begin("communicator on " + std::to_string(ranks) + " ranks: " + describe_command(argv));
  if (run_child(argv) != 0) throw std::runtime_error("the communicator benchmark failed: " + describe_command(argv));
  std::ifstream f(tmp);
  const nlohmann::json j = nlohmann::json::parse(f);
  CommRun run{calibrate::comm_points_from_json(j.at("points")), calibrate::stats_from(j.at("straggler"))};
  std::filesystem::remove(tmp);
  return run;
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.comm_only.empty()) {  // one rank of the communicator sweep, started by spawn_comm
    calibrate::CommSweepOptions o;
    o.quick = a.quick;
    o.repeats = a.repeats;
    o.evict_bytes = a.comm_evict_MiB * 1048576.0;
    return calibrate::comm_sweep_as_rank(o, a.repeats, a.comm_only);
  }
  const bool trace_only = !a.from_trace.cluster.empty() || !a.from_trace.judge.empty() || a.from_trace.json;
  if (a.from_trace.trace.empty() && trace_only)
    throw std::runtime_error("calibrate: --cluster, --judge and --json go with --from-trace TRACE");
  if (!a.from_trace.trace.empty()) {
    if (a.from_trace.cluster.empty()) throw std::runtime_error("calibrate --from-trace: --cluster NODE (a catalog node type) is required");
    calibrate_from_trace(a.from_trace);
    return;
  }
  if (a.out.empty()) throw std::runtime_error("calibrate: --out is required (TWINSIM_HOST_FILE is set but empty)");
  const std::filesystem::path out(a.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  calibrate::Calibration c;
  c.machine = calibrate::machine_line();
  c.cpu_model = calibrate::cpu_model();  // validate and simulate warn when used on another CPU
  c.cpu_layout = calibrate::cpu_layout();  // or on another core count or cache
  c.memory_GiB = calibrate::ram_GiB();
  c.cache_MiB = calibrate::last_level_cache_MiB();
  calibrate::SweepOptions o;
  o.quick = a.quick;
  o.repeats = a.quick ? std::min(a.repeats, 3) : a.repeats;
  o.cache_bytes = c.cache_MiB * 1048576.0;
  const int rounds = a.quick ? 1 : a.rounds;
  const std::vector<int> ranks = a.quick ? std::vector<int>{a.ranks.front()} : a.ranks;
  Progress progress(
      "calibrate", calibrate::compute_sweep_count(rounds, a.compute_ranks) + 1 + static_cast<int>(ranks.size()), false);
  calibrate::compute_sweeps(c, o, rounds, a.compute_ranks, [&progress](const std::string& what) { progress.begin(what); });
  progress.begin("the quick sweeps alone and beside " + std::to_string(a.compute_ranks - 1) + " busy process(es)");
  c.sharing = calibrate::measure_core_sharing(o, a.compute_ranks);
  c.op_host = calibrate::op_host_time(3 * o.repeats);  // the executor's own time per op
  c.machine += ", kernels timed as 1 of " + std::to_string(a.compute_ranks) + " busy processes";
  c.link_ranks = ranks.front();
  c.comm_evict_MiB = a.comm_evict_MiB;
  for (int r : ranks) {
    const CommRun run = spawn_comm(a, r, a.out + ".comm" + std::to_string(r) + ".tmp", progress);
    c.comm.insert(c.comm.end(), run.points.begin(), run.points.end());
    if (r == c.link_ranks) c.straggler = run.straggler;
  }
  c.machine += " (after the sweeps: " + calibrate::load_average() + ")";
  const calibrate::Fitted f = calibrate::fit_all(c);
  io::write_file_whole(out.string(), calibrate::hardware_yaml(c, f, out.stem().string()));
  std::filesystem::path raw = out;
  raw.replace_extension(".json");
  io::write_file_whole(raw.string(), calibrate::points_json(c).dump(1) + "\n");
  std::cout << "wrote " << out.string() << " and " << raw.string() << ": fp32 peak " << f.gemm.peak_flops / 1e9
            << " GFLOP/s, memcpy " << f.memory.copy_Bps / 1e9 << " GB/s x " << f.memory.efficiency << ", launch "
            << f.memory.launch_s * 1e6 << " us + " << c.op_host.median * 1e6 << " us an op's host time, link "
            << f.link.bandwidth_Bps / 1e9 << " GB/s, " << f.link.latency_s * 1e6 << " us; alone on the machine GEMMs x"
            << c.sharing.gemm_speedup << ", memory-bound x" << c.sharing.memory_speedup << "\n";
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(kCalibrateCommand.name, kCalibrateCommand.summary);
  cmd->add_option("--out", a->out, "hardware file to write (YAML; default: the host file `cluster: host` uses, "
                 "$TWINSIM_HOST_FILE or the source tree's hardware/calibrated/host.yaml); NAME.json beside it "
                 "gets the raw points");
  cmd->add_flag("--quick", a->quick, "a few shapes and sizes, 2 ranks only: a smoke test, not a calibration");
  cmd->add_option("--ranks", a->ranks, "rank counts of the communicator sweep (the first is fitted)")
      ->delimiter(',')
      ->check(cli::whole(2, 1024));
  cmd->add_option("--repeats", a->repeats, "timed repeats per point (the median is kept)")->check(cli::whole(1, 1000));
  cmd->add_option("--rounds", a->rounds, "the compute sweeps run this many times; a point keeps its median round (default 3)")
      ->check(cli::whole(1, 100));
  cmd->add_option("--compute-ranks", a->compute_ranks,
                 "time the kernels while this many processes in all run them (default: one per core, as in a "
                 "timing case where every core runs a rank)")
      ->check(cli::whole(1, 1024));
  cmd->add_option("--comm-evict", a->comm_evict_MiB,
                 "MiB every rank writes before each timed collective, as a step's ops between two collectives "
                 "touch the caches (default 4: one layer's ops of the validation suite's models)")
      ->check(cli::number(0.0, 65536.0));
  cmd->add_option("--from-trace", a->from_trace.trace,
                 "fit the GEMM, flash attention and memory-bound figures of --cluster's GPU to a PyTorch profiler "
                 "trace recorded with shapes, instead of measuring this machine (--out: the node file; none: printed)");
  cmd->add_option("--cluster", a->from_trace.cluster, "with --from-trace: the catalog node type the trace ran on (dgx-h100, ...)");
  cmd->add_option("--judge", a->from_trace.judge, "with --from-trace: other traces of the same GPU to predict with the fit");
  cmd->add_flag("--json", a->from_trace.json, "with --from-trace: print the fit and the judged traces' figures as JSON");
  cmd->add_option("--comm-only", a->comm_only, "internal: run as one rank of the communicator sweep")->group("");
  cmd->callback([a, cmd] {
    if (!a->from_trace.trace.empty()) a->from_trace.out = cmd->count("--out") ? a->out : "";
    run_calibrate(*a);
  });
}

}  // namespace twinsim
