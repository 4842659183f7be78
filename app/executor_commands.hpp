#pragma once
// The executor's commands (run, calibrate, validate, checkpoint) are built into
// `twinsim-executor` (cmd_run.cpp, cmd_calibrate.cpp, cmd_validate.cpp, cmd_checkpoint.cpp)
// and into `twinsim` as names that hand the command line over to it (executor_hand_over.cpp,
// app/hand_over.hpp). Their one-line summaries live here, so `twinsim --help` lists them as
// `twinsim-executor --help` does.
namespace twinsim {

struct CommandSummary {
  const char* name;
  const char* summary;
};

inline constexpr CommandSummary kRunCommand{
    "run", "run a training or inference scenario for real over MPI ranks and measure it"};
inline constexpr CommandSummary kCalibrateCommand{"calibrate",
                                                  "measure this machine's kernels and MPI into a hardware file"};
inline constexpr CommandSummary kValidateCommand{"validate",
                                                 "simulate, run and compare a suite of plans on the calibrated host"};
inline constexpr CommandSummary kCheckpointCommand{"checkpoint", "work with the checkpoints `twinsim run` writes"};

// The executable beside `twinsim` that holds them.
inline constexpr const char* kExecutorExecutable = "twinsim-executor";

}  // namespace twinsim
