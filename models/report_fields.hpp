#pragma once
// A report section of plain numbers (report_throughput, report_inference): each key once with
// its member, and writing and reading walk the same list, so a key cannot drift between them.
#include <span>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace twinsim {

template <class Section>
struct NumberField {
  const char* key;
  double Section::*member;
};

// Adds every field's key to `j` (an object, or null: made one).
template <class Section>
void write_numbers(nlohmann::json& j, const Section& s, std::span<const NumberField<Section>> fields) {
  if (j.is_null()) j = nlohmann::json::object();
  for (const NumberField<Section>& f : fields) j[f.key] = s.*f.member;
}

// Reads every field from `j`; `where` ("measured report: throughput") names the section in
// errors: a missing or non-numeric key is refused naming it.
template <class Section>
Section read_numbers(const nlohmann::json& j, const std::string& where, std::span<const NumberField<Section>> fields) {
  if (!j.is_object()) throw std::invalid_argument(where + " is missing");
  Section s;
  for (const NumberField<Section>& f : fields) {
    if (!j.contains(f.key) || !j[f.key].is_number())
      throw std::invalid_argument(where + "." + f.key + " is missing or not a number");
    s.*f.member = j[f.key].template get<double>();
  }
  return s;
}

}  // namespace twinsim
