// `twinsim compare SIM.json MEASURED.json [--json] [--plot PREFIX]`: a simulated report
// beside a measured one (step, per op, per op category, memory per category), the ops
// that contribute most to the gap first. MEASURED may also be a real run of the user's own
// stack: a PyTorch profiler trace (Chrome/Kineto JSON) or a Megatron-LM/NeMo, torchtitan or
// DeepSpeed log (compare/real_run.hpp). --plot draws PREFIX_ops.png and
// PREFIX_memory.png with plot_compare.py (matplotlib), which the installed tree keeps in
// PREFIX/share/twinsim beside PREFIX/bin/twinsim ($TWINSIM_PLOT_SCRIPT names another).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "app/child_process.hpp"
#include "app/commands.hpp"
#include "scenario/errors.hpp"
#include "compare/comparison.hpp"
#include "compare/real_run.hpp"
#include "io/whole_file.hpp"

namespace twinsim {

namespace {

struct CompareArgs {
  std::string simulated, measured, plot_prefix;
  bool json = false;
  int top = 15;
  std::vector<std::string> labels;  // the two columns' names (default predicted, measured)
  double global_batch = 0;          // a DeepSpeed log's sequences per step
};

// The measured file as text (a log) or JSON (a report or a profiler trace).
std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A real run: a profiler trace or a framework's log; nothing when MEASURED is a twinsim report.
std::optional<compare::RealRunComparison> compare_real_run(const CompareArgs& a) {
  // what is not a regular file (missing, a device) is refused by the reports' reader
  if (!std::filesystem::is_regular_file(a.measured)) return std::nullopt;
  const nlohmann::json simulated = compare::read_report(a.simulated);
  const std::string text = file_text(a.measured);
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded()) {
    if (!compare::is_kineto_trace(parsed)) return std::nullopt;
    return compare::compare_with_trace(simulated, compare::read_kineto_trace(parsed, a.measured));
  }
  const std::optional<double> batch = a.global_batch > 0 ? std::optional<double>(a.global_batch) : std::nullopt;
  return compare::compare_with_log(simulated, compare::read_training_log(text, a.measured), batch);
}

// The plotting script: $TWINSIM_PLOT_SCRIPT, else the one installed with this binary.
std::filesystem::path plot_script() {
  if (const char* env = std::getenv("TWINSIM_PLOT_SCRIPT")) return env;
  return installed_resource("plot_compare.py");
}

void plot(const nlohmann::json& comparison, const std::string& prefix) {
  const std::string data = prefix + "_compare.json";
  io::write_file_whole(data, comparison.dump(2) + "\n");
  const std::vector<std::string> argv{"python3", plot_script().string(), data, prefix};
  if (run_child(argv) != 0)
    throw std::runtime_error("plotting failed (" + describe_command(argv) +
                             "); is matplotlib installed? the data is in " + data);
}

compare::ColumnLabels labels_of(const CompareArgs& a) {
  if (a.labels.empty()) return {};
  if (a.labels.size() != 2 || a.labels[0].empty() || a.labels[1].empty())
    throw ScenarioError("--labels", "", "takes two names, e.g. --labels after,before (the first report's, then the second's)");
  return {a.labels[0], a.labels[1]};
}

void run_compare(const CompareArgs& a) {
  const compare::ColumnLabels labels = labels_of(a);  // refused before the files are read
  if (const std::optional<compare::RealRunComparison> real = compare_real_run(a)) {
    if (a.json) std::cout << compare::to_json(*real).dump(2) << "\n";
    else std::cout << compare::format_real_run(*real);
    return;
  }
  const compare::Comparison c = compare::compare_reports(compare::read_report(a.simulated), compare::read_report(a.measured));
  const nlohmann::json j = compare::to_json(c);
  if (a.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << compare::format_comparison(c, a.top, labels);
  if (!a.plot_prefix.empty()) {
    plot(j, a.plot_prefix);
    std::cerr << "wrote " << a.plot_prefix << "_ops.png and " << a.plot_prefix << "_memory.png\n";
  }
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand("compare", "line up a simulated report with a measured one");
  cmd->add_option("simulated", a->simulated, "report of `twinsim simulate --json`")->required();
  cmd->add_option("measured", a->measured,
                  "measured.json of `twinsim run`, a PyTorch profiler trace, or a Megatron-LM/NeMo, torchtitan or DeepSpeed log")
      ->required();
  cmd->add_option("--global-batch", a->global_batch, "a DeepSpeed log's sequences per step (its samples/s to a step time)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", a->json, "print the comparison as JSON");
  cmd->add_option("--plot", a->plot_prefix, "write PREFIX_ops.png and PREFIX_memory.png (matplotlib)");
  cmd->add_option("--top", a->top, "ops listed in the table (largest gap first)");
  cmd->add_option("--labels", a->labels,
                  "the table's two column names, e.g. after,before when comparing two simulated reports")
      ->delimiter(',');
  cmd->callback([a] { run_compare(*a); });
}

}  // namespace twinsim
