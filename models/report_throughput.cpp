#include "models/report_throughput.hpp"

#include <nlohmann/json.hpp>

#include "models/report_fields.hpp"

namespace twinsim {

namespace {

constexpr NumberField<Throughput> kFields[] = {{"tokens_per_s", &Throughput::tokens_per_s},
                                               {"tokens_per_s_per_gpu", &Throughput::tokens_per_s_per_gpu},
                                               {"model_tflops_per_gpu", &Throughput::model_tflops_per_gpu},
                                               {"hardware_tflops_per_gpu", &Throughput::hardware_tflops_per_gpu},
                                               {"mfu", &Throughput::mfu},
                                               {"hfu", &Throughput::hfu}};

}  // namespace

nlohmann::json to_json(const Throughput& t) {
  nlohmann::json j = nlohmann::json::object();
  write_numbers<Throughput>(j, t, kFields);
  return j;
}

Throughput read_throughput_section(const nlohmann::json& throughput, const std::string& side) {
  return read_numbers<Throughput>(throughput, side + " report: throughput", kFields);
}

}  // namespace twinsim
