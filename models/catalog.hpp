#pragma once
// The built-in catalog of real architectures (models/catalog/*.yaml, embedded in the
// binary at build time). Each entry is written like an inline `model:` mapping.
#include <string_view>
#include <utility>
#include <vector>

namespace twinsim {

// (name, YAML text) of every catalog model; the name is the file's stem.
std::vector<std::pair<std::string_view, std::string_view>> model_catalog_files();

// (name, JSON text) of the Hugging Face config.json files of models/catalog/hf, as their
// publishers wrote them; scenario/hf_config maps them like a user's `model.hf_config`.
std::vector<std::pair<std::string_view, std::string_view>> hf_model_catalog_files();

}  // namespace twinsim
