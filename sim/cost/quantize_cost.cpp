#include "sim/cost/quantize_cost.hpp"

namespace twinsim {

double quantize_bytes(Dtype from, Dtype to, double elements, int copies, bool amax_pass) {
  constexpr std::int64_t kBlock = 1 << 20;  // bytes an element, over a whole number of blocks
  const double copy = static_cast<double>(scaled_bytes(to, kBlock)) / kBlock;
  const auto read = static_cast<double>(dtype_bytes(from, 1));
  const double amax = amax_pass && to == Dtype::nvfp4 ? read : 0.0;
  return elements * (read + amax + copies * copy);
}

}  // namespace twinsim
