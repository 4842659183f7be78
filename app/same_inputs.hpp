#pragma once
// The processes of one MPI job (twinsim simulate or search under mpirun) check they were
// given the same inputs before any work: each process's scenario keys after --set, and the
// options given on its command line. Given different ones they would build different step
// graphs or search spaces and exchange ids that mean different things to each.
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "app/commands.hpp"
#include "sim/engine/exchange.hpp"

namespace twinsim {

// Input name -> value: "plan.tp" -> "8" (the scenario after --set, unvalidated),
// "--fidelity" -> "full" (each option given, other than the scenario's path and --set).
using NamedInputs = std::map<std::string, std::string>;

NamedInputs command_inputs(const CLI::App& command, const ScenarioArgs& args);

// Every process sends a hash of its inputs; when they differ, the inputs themselves, and
// every process throws the same ScenarioError naming the first input that differs and its
// value on process 0 and on the other process.
void check_same_inputs(engine::Exchange& exchange, const NamedInputs& mine);

}  // namespace twinsim
