#include "models/report_inference.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace twinsim {

namespace {

struct Field {
  const char* key;
  double InferenceSummary::*member;
};
constexpr Field kFields[] = {{"ttft_s", &InferenceSummary::ttft_s},
                             {"tpot_s", &InferenceSummary::tpot_s},
                             {"output_tokens_per_s", &InferenceSummary::output_tokens_per_s},
                             {"kv_cache_bytes_per_token", &InferenceSummary::kv_cache_bytes_per_token}};

}  // namespace

void write_inference_summary(nlohmann::json& inference, const InferenceSummary& s) {
  if (inference.is_null()) inference = nlohmann::json::object();
  for (const Field& f : kFields) inference[f.key] = s.*f.member;
  // a whole number of bytes reads as one (the simulator's count is an integer)
  const double kv = s.kv_cache_bytes_per_token;
  if (kv == std::floor(kv) && std::abs(kv) < 9e15) inference["kv_cache_bytes_per_token"] = static_cast<std::int64_t>(kv);
}

InferenceSummary read_inference_summary(const nlohmann::json& inference, const std::string& side) {
  const std::string where = side + " report: inference";
  if (!inference.is_object()) throw std::invalid_argument(where + " is missing");
  InferenceSummary s;
  for (const Field& f : kFields) {
    if (!inference.contains(f.key) || !inference[f.key].is_number())
      throw std::invalid_argument(where + "." + f.key + " is missing or not a number");
    s.*f.member = inference[f.key].get<double>();
  }
  return s;
}

}  // namespace twinsim
