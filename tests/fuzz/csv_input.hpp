#pragma once
// A CSV fuzz input (tests/fuzz/fuzz_csv.cpp): the first byte picks the reader, the rest is
// the file. Replayed from tests/fuzz/csv by tests/unit/reliability/fuzz_regression_test.cpp.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "sim/inference/requests.hpp"
#include "sim/validate/gemm_fit.hpp"
#include "sim/validate/network_fit.hpp"
#include "sim/validate/vtrain_csv.hpp"

namespace twinsim {

// The file readers take a path: the text goes to one private file, rewritten each time.
inline std::string fuzz_file(const std::string& text) {
  static const std::string path = "/tmp/twinsim_fuzz_csv." + std::to_string(::getpid()) + ".csv";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// Reads `input` with the reader its first byte picks: 0 request trace (serve --trace-file),
// 1 vTrain table (validate-csv), 2 nccl-tests table (fit-network; bit 2: --where run=a),
// 3 GEMM sweep (fit-gemm). A bad file throws std::runtime_error.
inline void read_fuzz_csv(const std::string& input) {
  if (input.empty()) return;
  const auto pick = static_cast<unsigned char>(input[0]);
  const std::string text = input.substr(1);
  switch (pick % 4) {
    case 0: parse_request_trace(text, "<fuzz>"); break;
    case 1: parse_vtrain_csv(text, "<fuzz>"); break;
    case 2: read_allreduce_csv(fuzz_file(text), 16, pick & 4 ? "run=a" : "", 0); break;
    default: read_gemm_csv(fuzz_file(text), "", Dtype::bf16); break;
  }
}

}  // namespace twinsim
