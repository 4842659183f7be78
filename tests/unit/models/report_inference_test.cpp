// The serving figures both reports carry (models/report_inference.hpp): written into the
// section beside its other keys, read back whole, a missing one refused naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "models/report_inference.hpp"
#include "tests/unit/models/refusal.hpp"

namespace twinsim {
namespace {

TEST(ReportInference, WritesBesideTheSectionsOwnKeysAndReadsBack) {
  nlohmann::json inference = {{"max_batch", 12}};
  write_inference_summary(inference, {0.1, 0.002, 1500.5, 8192});
  EXPECT_EQ(inference["max_batch"], 12);  // left as it was
  EXPECT_TRUE(inference["kv_cache_bytes_per_token"].is_number_integer());  // a whole number of bytes
  const InferenceSummary s = read_inference_summary(inference, "simulated");
  EXPECT_DOUBLE_EQ(s.ttft_s, 0.1);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 1500.5);
  EXPECT_DOUBLE_EQ(s.kv_cache_bytes_per_token, 8192);
  nlohmann::json fraction;
  write_inference_summary(fraction, {0, 0, 0, 8192.5});
  EXPECT_TRUE(fraction["kv_cache_bytes_per_token"].is_number_float());
  inference.erase("tpot_s");
  const std::string message = test::refusal([&] { read_inference_summary(inference, "measured"); });
  EXPECT_NE(message.find("measured report: inference.tpot_s"), std::string::npos) << message;
}

}  // namespace
}  // namespace twinsim
