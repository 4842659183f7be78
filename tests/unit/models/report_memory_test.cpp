// The report's memory section (models/report_memory.hpp): written and read back whole, each
// side's own keys only where it has them, and a broken section refused naming the key.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "models/report_memory.hpp"
#include "tests/unit/models/refusal.hpp"

namespace twinsim {
namespace {

MemorySection predicted() {
  MemorySection m;
  m.capacity_bytes = 80;
  m.peak_bytes = 21;
  m.fits = true;
  m.breakdown = {1, 2, 3, 4, 5, 6};
  m.stages = {{0, 21, {1, 2, 3, 4, 5, 6}, 7}, {1, 15, {0, 1, 2, 3, 4, 5}, 0}};
  m.host_bytes = 7;
  m.host_capacity_bytes = 100;
  return m;
}

TEST(ReportMemory, PredictedSectionRoundTrips) {
  const MemorySection m = predicted();
  const nlohmann::json j = to_json(m);
  EXPECT_EQ(j["breakdown"]["activations"], 4);
  EXPECT_EQ(j["stages"][1]["peak_bytes"], 15);
  EXPECT_FALSE(j.contains("per_rank"));        // measured only
  EXPECT_FALSE(j.contains("host_breakdown"));  // measured only
  const MemorySection back = read_memory_section(j, "simulated");
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.stages[0].host_bytes, 7);
  EXPECT_EQ(back.host_capacity_bytes, 100);
}

TEST(ReportMemory, MeasuredSectionRoundTrips) {
  MemorySection m;
  m.capacity_bytes = 0;
  m.peak_bytes = 9;
  m.breakdown = {9, 0, 0, 0, 0, 0};
  m.stages = {{0, 9, {9, 0, 0, 0, 0, 0}, std::nullopt}};
  m.host_breakdown = CategoryBytes{0, 0, 12, 0, 0, 0};
  m.host_bytes = 12;
  m.per_rank = {{0, 0, 9, {9, 1, 0, 0, 0, 0}}, {1, 0, 8, {8, 1, 0, 0, 0, 0}}};
  const nlohmann::json j = to_json(m);
  EXPECT_FALSE(j.contains("host_capacity_bytes"));  // predicted only
  EXPECT_FALSE(j["stages"][0].contains("host_bytes"));
  EXPECT_EQ(j["host_breakdown"]["optimizer"], 12);
  EXPECT_EQ(to_json(read_memory_section(j, "measured")), j);
}

TEST(ReportMemory, ABrokenSectionIsRefusedNamingTheKey) {
  nlohmann::json j = to_json(predicted());
  j.erase("peak_bytes");
  const std::string message = test::refusal([&] { read_memory_section(j, "measured"); });
  EXPECT_NE(message.find("measured report: memory.peak_bytes"), std::string::npos) << message;
  nlohmann::json k = to_json(predicted());
  k["breakdown"]["grads"] = "many";
  EXPECT_THROW(read_memory_section(k, "simulated"), std::invalid_argument);
  // an older report without a category reads it as 0
  nlohmann::json old = to_json(predicted());
  old["breakdown"].erase("kv_cache");
  EXPECT_EQ(read_memory_section(old, "simulated").breakdown[static_cast<std::size_t>(MemCategory::kv_cache)], 0);
}

}  // namespace
}  // namespace twinsim
