// `twinsim calibrate --out hardware/calibrated/NAME.yaml [--quick] [--ranks 2,4] [--compute-ranks N]`:
// microbenchmarks of the executor's kernels on this process (while N-1 others run them too) and of its MPI communicator
// on `mpirun -np R` ranks it starts itself, fitted into a hardware file the simulator
// reads (calibrate/calibration.hpp). NAME.json beside it keeps the raw points.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "app/child_process.hpp"
#include "app/cli_checks.hpp"
#include "app/commands.hpp"
#include "calibrate/calibration.hpp"
#include "calibrate/co_runners.hpp"
#include "exec/runtime/mpi_communicator.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct CalibrateArgs {
  std::string out = "hardware/calibrated/host.yaml";
  bool quick = false;
  std::vector<int> ranks{2, 4};
  int repeats = 7;
  int rounds = 3;  // the compute sweeps run this many times over; each point keeps its median round
  int compute_ranks = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // written by every rank before each timed collective (calibrate/comm_bench.hpp)
  double comm_evict_MiB = calibrate::CommSweepOptions{}.evict_bytes / 1048576.0;
  std::string comm_only;  // internal: this process is one of the ranks; rank 0 writes here
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// CPU model, cores and the load average: a calibration taken on a busy machine says so.
std::string machine_line() {
  std::string model = "unknown CPU";
  std::istringstream cpu(read_text("/proc/cpuinfo"));
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  std::string load = read_text("/proc/loadavg");
  load = load.substr(0, load.find(' ', load.find(' ', load.find(' ') + 1) + 1));
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, load average " + load;
}

// The last-level cache (L3) the cores share, from sysfs (0: not found).
double last_level_cache_MiB() {
  double best = 0;
  for (int index = 0; index < 8; ++index) {
    std::string size = read_text("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    if (size.empty()) continue;
    const double value = std::atof(size.c_str());  // "32768K"
    const char unit = size.find('M') != std::string::npos ? 'M' : size.find('K') != std::string::npos ? 'K' : 'B';
    best = std::max(best, unit == 'M' ? value : unit == 'K' ? value / 1024 : value / 1048576);
  }
  return best;
}

double ram_GiB() {
  std::istringstream mem(read_text("/proc/meminfo"));
  std::string key;
  double kib = 0;
  mem >> key >> kib;  // MemTotal: N kB
  return kib / 1048576.0;
}

// One comm sweep as MPI ranks; rank 0 writes the points.
void run_comm_ranks(const CalibrateArgs& a) {
  exec::MpiSession session;
  auto world = exec::MpiCommunicator::world();
  calibrate::CommSweepOptions o;
  o.quick = a.quick;
  o.repeats = a.repeats;
  o.evict_bytes = a.comm_evict_MiB * 1048576.0;
  const auto points = calibrate::comm_sweep(*world, o);
  const calibrate::Stats straggler = calibrate::straggler_sweep(*world, a.repeats);
  if (world->rank() != 0) return;
  const nlohmann::json out{{"points", calibrate::comm_points_json(points)}, {"straggler", calibrate::stats_json(straggler)}};
  io::write_file_whole(a.comm_only, out.dump(1) + "\n");
}

struct CommRun {
  std::vector<calibrate::CommPoint> points;
  calibrate::Stats straggler;
};

CommRun spawn_comm(const CalibrateArgs& a, int ranks, const std::string& tmp) {
  std::vector<std::string> argv = mpirun_argv(ranks);
  argv.insert(argv.end(), {self_executable().string(), "calibrate", "--comm-only", tmp, "--repeats",
                           std::to_string(a.repeats), "--comm-evict", std::to_string(a.comm_evict_MiB)});
  if (a.quick) argv.push_back("--quick");
  std::cerr << "calibrate: " << describe_command(argv) << "\n";
  if (run_child(argv) != 0) throw std::runtime_error("the communicator benchmark failed: " + describe_command(argv));
  std::ifstream f(tmp);
  const nlohmann::json j = nlohmann::json::parse(f);
  CommRun run{calibrate::comm_points_from_json(j.at("points")), calibrate::stats_from(j.at("straggler"))};
  std::filesystem::remove(tmp);
  return run;
}

// Folds round `k` (from 1) of a sweep into `all`, `per_point` keeping every round's
// stats: every sweep lists the same points in the same order, and a point keeps the
// median of its rounds (calibrate::merge_rounds).
template <typename Point>
void merge_round(std::vector<Point>& all, std::vector<std::vector<calibrate::Stats>>& per_point,
                 const std::vector<Point>& round, int k) {
  if (k == 1) {
    all = round;
    per_point.assign(round.size(), {});
  }
  if (round.size() != all.size()) throw std::logic_error("calibrate: a sweep's rounds differ in points");
  for (std::size_t i = 0; i < round.size(); ++i) {
    per_point[i].push_back(round[i].seconds);
    all[i].seconds = calibrate::merge_rounds(per_point[i]);
  }
}

void run_calibrate(const CalibrateArgs& a) {
  if (!a.comm_only.empty()) return run_comm_ranks(a);
  const std::filesystem::path out(a.out);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  calibrate::Calibration c;
  c.machine = machine_line();
  c.memory_GiB = ram_GiB();
  c.cache_MiB = last_level_cache_MiB();
  calibrate::SweepOptions o;
  o.quick = a.quick;
  o.repeats = a.quick ? std::min(a.repeats, 3) : a.repeats;
  o.cache_bytes = c.cache_MiB * 1048576.0;
  const int rounds = a.quick ? 1 : a.rounds;
  std::vector<std::vector<calibrate::Stats>> memory_rounds, gemm_rounds, attention_rounds;
  {
    const calibrate::CoRunners others(a.compute_ranks, [&o] {
      calibrate::memory_sweep(o);
      calibrate::gemm_sweep(o);
      calibrate::attention_sweep(o);
    });
    for (int k = 1; k <= rounds; ++k) {
      const std::string round = rounds > 1 ? " (round " + std::to_string(k) + " of " + std::to_string(rounds) + ")" : "";
      std::cerr << "calibrate: memory-bound kernels (" << a.compute_ranks - 1 << " other processes running the same)"
                << round << "\n";
      merge_round(c.memory, memory_rounds, calibrate::memory_sweep(o), k);
      std::cerr << "calibrate: GEMM" << round << "\n";
      merge_round(c.gemm, gemm_rounds, calibrate::gemm_sweep(o), k);
      std::cerr << "calibrate: attention" << round << "\n";
      merge_round(c.attention, attention_rounds, calibrate::attention_sweep(o), k);
    }
  }
  c.machine += ", kernels timed as 1 of " + std::to_string(a.compute_ranks) + " busy processes";
  const std::vector<int> ranks = a.quick ? std::vector<int>{a.ranks.front()} : a.ranks;
  c.link_ranks = ranks.front();
  c.comm_evict_MiB = a.comm_evict_MiB;
  for (int r : ranks) {
    const CommRun run = spawn_comm(a, r, a.out + ".comm" + std::to_string(r) + ".tmp");
    c.comm.insert(c.comm.end(), run.points.begin(), run.points.end());
    if (r == c.link_ranks) c.straggler = run.straggler;
  }
  c.machine += " (after the sweeps: " + machine_line().substr(machine_line().find("load average") + 13) + ")";
  const calibrate::Fitted f = calibrate::fit_all(c);
  io::write_file_whole(out.string(), calibrate::hardware_yaml(c, f, out.stem().string()));
  std::filesystem::path raw = out;
  raw.replace_extension(".json");
  io::write_file_whole(raw.string(), calibrate::points_json(c).dump(1) + "\n");
  std::cout << "wrote " << out.string() << " and " << raw.string() << ": fp32 peak " << f.gemm.peak_flops / 1e9
            << " GFLOP/s, memcpy " << f.memory.copy_Bps / 1e9 << " GB/s x " << f.memory.efficiency << ", launch "
            << f.memory.launch_s * 1e6 << " us, link " << f.link.bandwidth_Bps / 1e9 << " GB/s, "
            << f.link.latency_s * 1e6 << " us\n";
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "measure this machine's kernels and MPI into a hardware file");
  cmd->add_option("--out", a->out, "hardware file to write (YAML); NAME.json beside it gets the raw points");
  cmd->add_flag("--quick", a->quick, "a few shapes and sizes, 2 ranks only: a smoke test, not a calibration");
  cmd->add_option("--ranks", a->ranks, "rank counts of the communicator sweep (the first is fitted)")->delimiter(',');
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
  cmd->add_option("--comm-only", a->comm_only, "internal: run as one rank of the communicator sweep")->group("");
  cmd->callback([a] { run_calibrate(*a); });
}

}  // namespace twinsim
