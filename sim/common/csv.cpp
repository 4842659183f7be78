#include "sim/common/csv.hpp"

#include <cmath>
#include <sstream>

namespace twinsim {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) {
    cell.erase(0, cell.find_first_not_of(" \t\r"));
    cell.erase(cell.find_last_not_of(" \t\r") + 1);
    cells.push_back(cell);
  }
  // "a,b," has three cells, the last empty (getline drops it)
  const std::size_t last = line.find_last_not_of(" \t\r");
  if (last != std::string::npos && line[last] == ',') cells.emplace_back();
  return cells;
}

std::optional<double> parse_number(const std::string& cell) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(cell, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != cell.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace twinsim
