#pragma once
// The one error a bad scenario raises: it names the key, the value and the rule broken,
// e.g. "plan.tp=3 does not divide model.heads=32". The CLI prints what() and exits 2.
#include <stdexcept>
#include <string>

namespace twinsim {

struct ScenarioError : std::runtime_error {
  std::string key;    // dotted path, e.g. "plan.tp"
  std::string value;  // the offending value as written ("" when missing)
  std::string rule;   // what it breaks, e.g. "does not divide model.heads=32"

  ScenarioError(std::string key_, std::string value_, std::string rule_)
      : std::runtime_error(format(key_, value_, rule_)),
        key(std::move(key_)),
        value(std::move(value_)),
        rule(std::move(rule_)) {}

 private:
  static std::string format(const std::string& k, const std::string& v, const std::string& r) {
    if (v.empty()) return k + ": " + r;
    return k + "=" + v + " " + r;
  }
};

// "plan" + "tp" -> "plan.tp" (a key under a path; the root's path is "").
inline std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

}  // namespace twinsim
