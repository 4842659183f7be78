// `twinsim trust-table [--cases FILE] [--scenarios DIR] [--out FILE] [--coverage-out FILE] [--check]`:
// predicts every held-out validation case (scenarios/validation/cases.csv), writes their errors
// to sim/trust/case_errors.csv (what the trust intervals are made of; rebuild twinsim after) and
// the leave-one-out coverage of the 80% intervals per regime to sim/trust/coverage.csv. Run from
// the repository root. --check writes nothing and fails when the committed files are stale.
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "io/whole_file.hpp"
#include "sim/trust/interval.hpp"
#include "trust/validation_cases.hpp"

namespace twinsim {

namespace {

struct Options {
  std::string cases = "scenarios/validation/cases.csv";
  std::string scenarios = "scenarios";
  std::string out = "sim/trust/case_errors.csv";
  std::string coverage_out = "sim/trust/coverage.csv";
  bool check = false;
};

bool same_as_file(const std::string& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream held;
  held << in.rdbuf();
  return in && held.str() == text;
}

void run(const Options& o) {
  const std::vector<trust::CaseError> errors =
      trust::run_validation_cases(trust::read_validation_cases(o.cases), o.scenarios);
  const std::string table = trust::to_csv(errors);
  const std::string coverage = trust::coverage_table(trust::leave_one_out_coverage(errors));
  std::cout << errors.size() << " held-out cases; leave-one-out coverage of the 80% intervals:\n" << coverage;
  if (o.check) {
    const bool fresh = same_as_file(o.out, table) && same_as_file(o.coverage_out, coverage);
    if (!fresh) throw std::runtime_error(o.out + " or " + o.coverage_out + " is stale: run `twinsim trust-table`");
    std::cout << o.out << " and " << o.coverage_out << " are up to date\n";
    return;
  }
  io::write_file_whole(o.out, table);
  io::write_file_whole(o.coverage_out, coverage);
  std::cout << "wrote " << o.out << " and " << o.coverage_out << " (rebuild twinsim to embed them)\n";
}

}  // namespace

void add_trust_table_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("trust-table", "predict the held-out validation cases and write their error table");
  cmd->add_option("--cases", o->cases, "the validation cases")->capture_default_str();
  cmd->add_option("--scenarios", o->scenarios, "the folder their scenario paths start from")->capture_default_str();
  cmd->add_option("--out", o->out, "the per-case error table")->capture_default_str();
  cmd->add_option("--coverage-out", o->coverage_out, "the leave-one-out coverage per regime")->capture_default_str();
  cmd->add_flag("--check", o->check, "write nothing; fail when the files differ from what the simulator predicts");
  cmd->callback([o] { run(*o); });
}

}  // namespace twinsim
