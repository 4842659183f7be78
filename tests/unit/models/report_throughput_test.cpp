// The report's throughput section (models/report_throughput.hpp): written and read back
// whole, and a missing key refused naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "models/report_throughput.hpp"
#include "tests/unit/models/refusal.hpp"

namespace twinsim {
namespace {

TEST(ReportThroughput, RoundTripsAndRefusesAMissingKey) {
  const Throughput t{1000, 125, 150.5, 160.25, 0.48, 0.51};
  const nlohmann::json j = to_json(t);
  EXPECT_EQ(j.size(), 6u);
  EXPECT_EQ(j["hardware_tflops_per_gpu"], 160.25);
  EXPECT_EQ(to_json(read_throughput_section(j, "simulated")), j);
  nlohmann::json broken = j;
  broken.erase("mfu");
  const std::string message = test::refusal([&] { read_throughput_section(broken, "measured"); });
  EXPECT_NE(message.find("measured report: throughput.mfu"), std::string::npos) << message;
}

}  // namespace
}  // namespace twinsim
