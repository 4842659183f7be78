#include "calibrate/measured_busbw.hpp"

#include <cstdio>
#include <map>
#include <sstream>

namespace twinsim::calibrate {

std::string measured_busbw_yaml(const std::vector<CommPoint>& points, const std::string& indent) {
  // op -> ranks -> bytes -> busbw (bytes/s); the maps keep each curve in size order
  std::map<std::string, std::map<int, std::map<double, double>>> curves;
  for (const CommPoint& p : points)
    if (p.busbw_Bps() > 0) curves[p.op][p.ranks][p.bytes] = p.busbw_Bps();
  if (curves.empty()) return "";
  std::ostringstream y;
  char number[64];
  y << indent << "measured_busbw:\n";
  for (const auto& [op, by_ranks] : curves) {
    y << indent << "  " << op << ":\n";
    for (const auto& [ranks, curve] : by_ranks) {
      y << indent << "    " << ranks << ": [";
      const char* sep = "";
      for (const auto& [bytes, busbw] : curve) {
        std::snprintf(number, sizeof number, "[%.0f, %.6g]", bytes, busbw / 1e9);
        y << sep << number;
        sep = ", ";
      }
      y << "]\n";
    }
  }
  return y.str();
}

}  // namespace twinsim::calibrate
