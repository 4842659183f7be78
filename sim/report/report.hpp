#pragma once
// The JSON report of SCENARIO.md ("params", "memory", "time", "throughput",
// "inference") and its human-readable table.
#include <ostream>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "scenario/scenario.hpp"
#include "sim/engine/exchange.hpp"
#include "sim/training/step_graph.hpp"

namespace twinsim {

// The "params" object: total and active parameter counts.
nlohmann::json params_json(const Scenario& s);

// `twinsim memory`: params + memory.
nlohmann::json memory_report(const Scenario& s);

// `twinsim simulate`: the full report; a Chrome trace goes to `trace_path` if given. With
// an exchange (mpirun), the training step's simulation is split over its processes; every
// process returns the same report.
nlohmann::json simulate_report(const Scenario& s, const std::string& trace_path = "",
                               Fidelity fidelity = Fidelity::fast, engine::Exchange* exchange = nullptr);

// The report as aligned text tables (every section the report has).
void print_report(std::ostream& out, const Scenario& s, const nlohmann::json& report);

}  // namespace twinsim
