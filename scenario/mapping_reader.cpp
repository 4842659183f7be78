#include "scenario/mapping_reader.hpp"

#include <cmath>

#include "scenario/errors.hpp"
#include "scenario/suggest.hpp"

namespace twinsim {

MappingReader::MappingReader(const YAML::Node& node, std::string path)
    : node_(node), path_(std::move(path)) {
  if (!node_.IsMap())
    throw ScenarioError(path_.empty() ? "scenario" : path_, text_of(node_), "must be a mapping of keys to values");
}

std::string MappingReader::key_path(const std::string& key) const { return join_key(path_, key); }

namespace {

// A value as an error message shows it: bytes outside printable ASCII as \xNN (a binary
// file read as YAML printed garbage), at most 80 characters.
std::string printable(const std::string& text) {
  constexpr std::size_t kLongest = 80;
  std::string out;
  for (const char c : text) {
    if (out.size() >= kLongest) return out + "...";
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char* const kHex = "0123456789abcdef";
      out += std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
  }
  return out;
}

}  // namespace

std::string MappingReader::text_of(const YAML::Node& n) const {
  if (!n.IsDefined() || n.IsNull()) return "";
  if (n.IsScalar()) return printable(n.Scalar());
  YAML::Emitter out;
  out.SetSeqFormat(YAML::Flow);
  out.SetMapFormat(YAML::Flow);
  out << n;
  return printable(out.c_str());
}

bool MappingReader::has(const std::string& key) {
  read_.insert(key);
  const YAML::Node n = node_[key];
  return n.IsDefined() && !n.IsNull();
}

YAML::Node MappingReader::child(const std::string& key) {
  read_.insert(key);
  return node_[key];
}

YAML::Node MappingReader::scalar(const std::string& key) {
  YAML::Node n = child(key);
  if (n.IsDefined() && !n.IsNull() && !n.IsScalar())
    throw ScenarioError(key_path(key), text_of(n), "must be a single value, not a list or mapping");
  return n;
}

std::optional<double> MappingReader::optional_number(const std::string& key, double min,
                                                     double max) {
  const YAML::Node n = scalar(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  double v = 0;
  if (!YAML::convert<double>::decode(n, v) || !std::isfinite(v))
    throw ScenarioError(key_path(key), n.Scalar(), "must be a number");
  if (v < min || v > max)
    throw ScenarioError(key_path(key), n.Scalar(),
                        "is out of range [" + YAML::Dump(YAML::Node(min)) + ", " +
                            YAML::Dump(YAML::Node(max)) + "]");
  return v;
}

double MappingReader::number(const std::string& key, double fallback, double min, double max) {
  return optional_number(key, min, max).value_or(fallback);
}

std::optional<std::int64_t> MappingReader::optional_integer(const std::string& key,
                                                            std::int64_t min, std::int64_t max) {
  const YAML::Node n = scalar(key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  double v = 0;
  if (!YAML::convert<double>::decode(n, v) || !std::isfinite(v))
    throw ScenarioError(key_path(key), n.Scalar(), "must be an integer");
  if (v != std::floor(v)) throw ScenarioError(key_path(key), n.Scalar(), "must be an integer");
  if (v < static_cast<double>(min))
    throw ScenarioError(key_path(key), n.Scalar(), "must be at least " + std::to_string(min));
  if (v > static_cast<double>(max))
    throw ScenarioError(key_path(key), n.Scalar(), "is too large (at most " + std::to_string(max) + ")");
  return static_cast<std::int64_t>(v);
}

std::int64_t MappingReader::integer(const std::string& key, std::int64_t fallback,
                                    std::int64_t min, std::int64_t max) {
  return optional_integer(key, min, max).value_or(fallback);
}

std::int64_t MappingReader::required_integer(const std::string& key, std::int64_t min,
                                             std::int64_t max) {
  auto v = optional_integer(key, min, max);
  if (!v) throw ScenarioError(key_path(key), "", "is required");
  return *v;
}

bool MappingReader::boolean(const std::string& key, bool fallback) {
  const YAML::Node n = scalar(key);
  if (!n.IsDefined() || n.IsNull()) return fallback;
  bool v = false;
  if (!YAML::convert<bool>::decode(n, v))
    throw ScenarioError(key_path(key), n.Scalar(), "must be true or false");
  return v;
}

std::string MappingReader::string(const std::string& key, const std::string& fallback) {
  const YAML::Node n = scalar(key);
  if (!n.IsDefined() || n.IsNull()) return fallback;
  return n.Scalar();
}

std::string MappingReader::choice(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& choices) {
  const std::string v = string(key, fallback);
  for (const std::string& c : choices)
    if (c == v) return v;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : " | ") + c;
  throw ScenarioError(key_path(key), v, "is not one of " + list + did_you_mean(v, choices));
}

std::vector<std::int64_t> MappingReader::integer_list(const std::string& key, std::int64_t min, std::int64_t max) {
  const YAML::Node n = child(key);
  std::vector<std::int64_t> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!n.IsSequence()) throw ScenarioError(key_path(key), text_of(n), "must be a list of integers");
  for (std::size_t i = 0; i < n.size(); ++i) {
    double v = 0;
    const std::string item = key_path(key) + "[" + std::to_string(i) + "]";
    if (!n[i].IsScalar() || !YAML::convert<double>::decode(n[i], v) || v != std::floor(v))
      throw ScenarioError(item, text_of(n[i]), "must be an integer");
    if (v < static_cast<double>(min))
      throw ScenarioError(item, n[i].Scalar(), "must be at least " + std::to_string(min));
    if (v > static_cast<double>(max))
      throw ScenarioError(item, n[i].Scalar(), "is too large (at most " + std::to_string(max) + ")");
    out.push_back(static_cast<std::int64_t>(v));
  }
  return out;
}

void MappingReader::reject_unknown() const {
  const std::vector<std::string> known(read_.begin(), read_.end());
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (read_.count(key) == 0)
      throw ScenarioError(key_path(key), "", "is not a known key" + did_you_mean(key, known));
  }
}

}  // namespace twinsim
