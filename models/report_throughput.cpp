#include "models/report_throughput.hpp"

#include <stdexcept>

namespace twinsim {

namespace {

// Each key once, with its member: writing and reading walk the same list.
struct Field {
  const char* key;
  double Throughput::*member;
};
constexpr Field kFields[] = {{"tokens_per_s", &Throughput::tokens_per_s},
                             {"tokens_per_s_per_gpu", &Throughput::tokens_per_s_per_gpu},
                             {"model_tflops_per_gpu", &Throughput::model_tflops_per_gpu},
                             {"hardware_tflops_per_gpu", &Throughput::hardware_tflops_per_gpu},
                             {"mfu", &Throughput::mfu},
                             {"hfu", &Throughput::hfu}};

}  // namespace

nlohmann::json to_json(const Throughput& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : kFields) j[f.key] = t.*f.member;
  return j;
}

Throughput read_throughput_section(const nlohmann::json& throughput, const std::string& side) {
  const std::string where = side + " report: throughput";
  if (!throughput.is_object()) throw std::invalid_argument(where + " is missing");
  Throughput t;
  for (const Field& f : kFields) {
    if (!throughput.contains(f.key) || !throughput[f.key].is_number())
      throw std::invalid_argument(where + "." + f.key + " is missing or not a number");
    t.*f.member = throughput[f.key].get<double>();
  }
  return t;
}

}  // namespace twinsim
