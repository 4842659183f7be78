#include "models/plan_key_table.hpp"

#include <sstream>

#include "models/plan_fields.hpp"

namespace twinsim {

namespace {

std::string_view searched_text(InSearch in) {
  switch (in) {
    case InSearch::degree: return "as a parallel degree";
    case InSearch::setting:
    case InSearch::late_setting: return "yes";
    case InSearch::no: break;
  }
  return "no";
}

struct Row {
  std::string values, fallback;
};

// Text in backquotes, appended (`+=` rather than "`" + text: g++ 12's -Wrestrict false alarm).
std::string code(const std::string& text) {
  std::string out = "`";
  out += text;
  out += '`';
  return out;
}

Row row_of(const IntKnob& k) {
  std::string range = "integer, ";
  range += std::to_string(k.min);
  range += " to ";
  range += std::to_string(k.max);
  // plan.dp's 0 lies outside the range: the rest of the GPUs, derived from the others
  std::string fallback = code(std::to_string(k.fallback));
  if (k.fallback < k.min) fallback += " (derived)";
  return {range, fallback};
}
Row row_of(const BoolKnob& k) { return {"`true`, `false`", k.fallback ? "`true`" : "`false`"}; }
template <class E>
Row row_of(const ChoiceKnob<E>& k) {
  std::string values;
  for (int i = 0; i < k.count; ++i) {
    if (i) values += ", ";
    values += code(std::string(to_string(k.values[i])));
  }
  return {values, code(std::string(to_string(k.fallback)))};
}
Row row_of(const RatioKnob& k) {
  PlanKnobs p;
  std::string values = "number, ";
  p.*k.member = k.min;
  values += knob_text(k, p);
  values += " to ";
  p.*k.member = k.max;
  values += knob_text(k, p);
  p.*k.member = k.fallback;
  return {values, code(knob_text(k, p))};
}
Row row_of(const ModuleSetKnob& k) {
  std::string values = "list of ";
  for (RecomputeModule m : kRecomputeModules) {
    if (values.size() > 8) values += ", ";
    values += code(std::string(to_string(m)));
  }
  PlanKnobs p;
  p.*k.member = k.fallback;
  return {values, code(knob_text(k, p))};
}
Row row_of(const LayerListKnob& k) {
  std::string values = "list of layer counts, one a stage, each ";
  values += std::to_string(k.min);
  values += " to ";
  values += std::to_string(k.max);
  return {values, "even split"};
}

}  // namespace

std::string plan_key_table_markdown() {
  std::ostringstream out;
  out << "| key | values | default | searched |\n|---|---|---|---|\n";
  for_each_plan_knob([&](const auto& knob) {
    const Row r = row_of(knob);
    out << "| `plan." << knob.key << "` | " << r.values << " | " << r.fallback << " | " << searched_text(knob.in_search)
        << " |\n";
  });
  return out.str();
}

}  // namespace twinsim
