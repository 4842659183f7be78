#pragma once
// Published component failure rates (hardware/reliability.hpp), each set derived from one
// run's report with its source beside the numbers (hardware/failure_rates.cpp).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/reliability.hpp"

namespace twinsim {

// The set named `name` ("llama3-h100", "rsc1-a100"), or nothing.
std::optional<FailureRates> published_failure_rates(std::string_view name);
std::vector<std::string> published_failure_rate_names();
// The names as a message lists them: "llama3-h100, rsc1-a100".
std::string published_failure_rate_list();

// The default storage a scenario gets when it names none: the per-GPU share of Meta's Tectonic
// file system as the Llama 3 run used it (hardware/failure_rates.cpp), times the GPUs.
double default_storage_Bps_per_gpu();

}  // namespace twinsim
