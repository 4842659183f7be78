#include "sim/common/csv.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

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

double positive_cell(const std::vector<std::string>& cells, int column, const std::vector<std::string>& header,
                     const std::string& where) {
  const std::string& cell = cells.at(static_cast<std::size_t>(column));
  const std::string at = where + ", column " + std::to_string(column + 1) + " (" + header.at(column) + "): '" + cell + "'";
  const std::optional<double> v = parse_number(cell);
  if (!v) throw std::runtime_error(at + " is not a number");
  if (!(*v > 0)) throw std::runtime_error(at + " must be above 0");
  return *v;
}

}  // namespace twinsim
