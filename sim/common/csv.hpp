#pragma once
// The little CSV the simulator reads (request traces, measured-run tables): comma-separated
// cells without quoting, trimmed of blanks (and of a Windows line end); a trailing comma
// ends the line with an empty cell.
#include <optional>
#include <string>
#include <vector>

namespace twinsim {

std::vector<std::string> split_csv_line(const std::string& line);

// The whole cell as a finite number, or nothing.
std::optional<double> parse_number(const std::string& cell);

// Cell `column` (0-based) of a row as a finite number above zero; otherwise
// std::runtime_error "WHERE, column N (NAME): 'CELL' is not a number" (or "must be above
// 0"), where `where` is "FILE:LINE" and NAME the header's name of the column.
double positive_cell(const std::vector<std::string>& cells, int column, const std::vector<std::string>& header,
                     const std::string& where);

}  // namespace twinsim
