#include "scenario/suggest.hpp"

#include <algorithm>

namespace twinsim {

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

namespace {

// Catalog names are families of '-'-separated parts (h100-sxm, dgx-h100): a name that holds
// the word as whole parts is what was meant, however many letters the rest adds.
std::string family_hint(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.empty()) return "";
  std::vector<std::string> family;
  for (const std::string& c : candidates)
    if (c != word && ("-" + c + "-").find("-" + word + "-") != std::string::npos) family.push_back(c);
  std::stable_sort(family.begin(), family.end(), [&word](const std::string& a, const std::string& b) {
    return edit_distance(word, a) < edit_distance(word, b);
  });
  if (family.size() > 3) family.resize(3);
  std::string hint;
  for (std::size_t i = 0; i < family.size(); ++i)
    hint += (i == 0 ? "" : i + 1 == family.size() ? " or " : ", ") + ("'" + family[i] + "'");
  return hint.empty() ? "" : ", did you mean " + hint + "?";
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  if (std::string family = family_hint(word, candidates); !family.empty()) return family;
  std::string best;
  int best_distance = 1 << 30;
  for (const std::string& c : candidates) {
    const int d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  // a third of the word's length, at least 2 edits, is still a plausible typo
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  if (best.empty() || best_distance > limit) return "";
  return ", did you mean '" + best + "'?";
}

}  // namespace twinsim
