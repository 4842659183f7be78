#pragma once
// The rows of a committed microbenchmark table (scenarios/validation/microbench/<file>), header
// skipped, each split on commas and checked for its column count: the reader of the inference
// tests that judge the serving prices against measured kernel tables.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "sim/common/csv.hpp"

namespace twinsim::test {

inline std::vector<std::vector<std::string>> microbench_rows(const std::string& file, std::size_t columns) {
  std::ifstream in(std::string(TWINSIM_SOURCE_DIR) + "/scenarios/validation/microbench/" + file);
  EXPECT_TRUE(in) << file;
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    rows.push_back(split_csv_line(line));
    EXPECT_EQ(rows.back().size(), columns) << line;
  }
  return rows;
}

}  // namespace twinsim::test
