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

}  // namespace twinsim
