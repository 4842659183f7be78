#pragma once
// "did you mean ...?" hints for misspelt keys and catalog names.
#include <string>
#include <vector>

namespace twinsim {

// Edit distance (Levenshtein) between two words.
int edit_distance(const std::string& a, const std::string& b);

// ", did you mean 'x'?": the candidates of the word's family first (names holding it as whole
// '-'-separated parts: "h100" -> 'h100-sxm', "a100" -> 'a100-sxm-40gb' or 'a100-sxm-80gb',
// up to three, closest first), else the closest candidate within a few edits, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace twinsim
