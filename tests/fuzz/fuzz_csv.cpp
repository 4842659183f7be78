// libFuzzer target over the CSV readers a user's file reaches: the request trace (serve
// --trace-file), the vTrain table (validate-csv), the nccl-tests table (fit-network) and
// the GEMM sweep (fit-gemm); tests/fuzz/csv_input.hpp picks one by the input's first byte.
// A reader refuses a bad file with a std::runtime_error (ScenarioError and OverflowError
// among them); anything else, a crash or a sanitizer report, is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tests/fuzz/csv_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    twinsim::read_fuzz_csv(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error&) {
  }
  return 0;
}
