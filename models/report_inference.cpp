#include "models/report_inference.hpp"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "models/report_fields.hpp"

namespace twinsim {

namespace {

constexpr NumberField<InferenceSummary> kFields[] = {
    {"ttft_s", &InferenceSummary::ttft_s},
    {"tpot_s", &InferenceSummary::tpot_s},
    {"output_tokens_per_s", &InferenceSummary::output_tokens_per_s},
    {"kv_cache_bytes_per_token", &InferenceSummary::kv_cache_bytes_per_token}};

}  // namespace

void write_inference_summary(nlohmann::json& inference, const InferenceSummary& s) {
  write_numbers<InferenceSummary>(inference, s, kFields);
  // a whole number of bytes reads as one (the simulator's count is an integer)
  const double kv = s.kv_cache_bytes_per_token;
  if (kv == std::floor(kv) && std::abs(kv) < 9e15) inference["kv_cache_bytes_per_token"] = static_cast<std::int64_t>(kv);
}

InferenceSummary read_inference_summary(const nlohmann::json& inference, const std::string& side) {
  return read_numbers<InferenceSummary>(inference, side + " report: inference", kFields);
}

}  // namespace twinsim
