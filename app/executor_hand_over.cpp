// `twinsim`'s side of the executor's commands: each is listed with its summary and, when
// given, hands the whole command line over to `twinsim-executor` beside this binary, which
// parses it (its --help included). So `twinsim` builds and links without the executor, the
// kernels or the calibration (scripts/run-default.sh), and every command keeps its name.
#include <stdexcept>
#include <string>

#include "app/child_process.hpp"
#include "app/commands.hpp"
#include "app/executor_commands.hpp"
#include "app/hand_over.hpp"

namespace twinsim {

namespace {

[[noreturn]] void hand_over_to_executor(const std::string& command) {
  const auto executor = executable_beside_this_one(kExecutorExecutable);
  if (!executor)
    throw std::runtime_error("`twinsim " + command + "` runs in " + kExecutorExecutable + ", which is not beside " +
                             self_executable().string() + ": build it (cmake --build BUILD --target " +
                             kExecutorExecutable + "; scripts/build.sh builds everything)");
  hand_over_to(*executor);
}

void add_handed_over_command(CLI::App& app, const CommandSummary& command) {
  CLI::App* cmd = app.add_subcommand(command.name, command.summary);
  cmd->prefix_command();  // every argument after the command's name is the executor's to read
  cmd->set_help_flag();   // `twinsim run --help` too
  cmd->callback([name = std::string(command.name)] { hand_over_to_executor(name); });
}

}  // namespace

void add_run_command(CLI::App& app) { add_handed_over_command(app, kRunCommand); }
void add_calibrate_command(CLI::App& app) { add_handed_over_command(app, kCalibrateCommand); }
void add_validate_command(CLI::App& app) { add_handed_over_command(app, kValidateCommand); }
void add_checkpoint_command(CLI::App& app) { add_handed_over_command(app, kCheckpointCommand); }

}  // namespace twinsim
