#pragma once
// Reads one YAML mapping of a scenario with type and range checks. Every key read is
// remembered, so reject_unknown() can name the keys nobody asked for (typos).
#include <yaml-cpp/yaml.h>

#include "scenario/errors.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace twinsim {

class MappingReader {
 public:
  // `path` is the dotted location of the mapping ("plan", "model.moe"); "" for the root.
  MappingReader(const YAML::Node& node, std::string path);

  bool has(const std::string& key);
  std::string key_path(const std::string& key) const;

  // Integers must be whole numbers within [min, max].
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min = 1,
                       std::int64_t max = (std::int64_t{1} << 53));
  std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min = 1,
                                               std::int64_t max = (std::int64_t{1} << 53));
  std::int64_t required_integer(const std::string& key, std::int64_t min = 1,
                                std::int64_t max = (std::int64_t{1} << 53));
  double number(const std::string& key, double fallback, double min, double max);
  std::optional<double> optional_number(const std::string& key, double min, double max);
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  // One of `choices`; the message lists them.
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices);
  std::vector<std::int64_t> integer_list(const std::string& key, std::int64_t min = 1,
                                         std::int64_t max = std::int64_t{1} << 50);
  // A child node, marked as read; an undefined node when absent.
  YAML::Node child(const std::string& key);

  // Throws ScenarioError for the first key that was never read, with a suggestion.
  void reject_unknown() const;

 private:
  YAML::Node node_;
  std::string path_;
  std::set<std::string> read_;

  YAML::Node scalar(const std::string& key);
  std::string text_of(const YAML::Node& n) const;
};


}  // namespace twinsim
