#pragma once
// Strict checks for numbers given on the command line, in the scenario loader's words
// (flag, value, rule): finite, inside the range, whole numbers without a fraction, an
// exponent or trailing text. CLI11's own checks accept "nan", print ranges of 300 digits
// and let "-1" wrap into an unsigned seed.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include <CLI/CLI.hpp>

#include "scenario/errors.hpp"

namespace twinsim::cli {

inline std::string shown(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// A finite number in [min, max] (`above_min`: strictly above min).
inline CLI::Validator number(double min, double max, bool above_min = false) {
  const std::string rule = std::string("must be a finite number ") + (above_min ? "> " : ">= ") + shown(min) +
                           (std::isinf(max) ? "" : " and <= " + shown(max));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, v);
        const bool ok = error == std::errc() && stop == end && std::isfinite(v) && (above_min ? v > min : v >= min) &&
                        v <= max;
        return ok ? std::string() : text + " " + rule;
      },
      "NUMBER");
}

// A whole number in [min, max], written as digits.
inline CLI::Validator whole(std::int64_t min, std::int64_t max) {
  const std::string rule = "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, v);
        const bool ok = error == std::errc() && stop == end && v >= min && v <= max;
        return ok ? std::string() : text + " " + rule;
      },
      "INT");
}

// Strict parse of one whole number of a compound value (e.g. each side of A:B).
inline bool parse_whole(const std::string& text, std::int64_t& out) {
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, out);
  return error == std::errc() && stop == end && !text.empty();
}

// "A:B", whole numbers with min <= A <= B <= max; otherwise a ScenarioError naming `flag`.
inline std::pair<std::int64_t, std::int64_t> whole_range(const std::string& flag, const std::string& text,
                                                         std::int64_t min, std::int64_t max) {
  const auto colon = text.find(':');
  std::int64_t lo = 0, hi = 0;
  if (colon == std::string::npos || !parse_whole(text.substr(0, colon), lo) || !parse_whole(text.substr(colon + 1), hi))
    throw ScenarioError(flag, text, "must be A:B with whole numbers, e.g. 8:1024");
  if (lo < min || hi < lo || hi > max)
    throw ScenarioError(flag, text, "must satisfy " + std::to_string(min) + " <= A <= B <= " + std::to_string(max));
  return {lo, hi};
}

}  // namespace twinsim::cli
