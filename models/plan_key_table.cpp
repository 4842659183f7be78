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

Row row_of(const IntKnob& k) {
  const std::string range = "integer, " + std::to_string(k.min) + " to " + std::to_string(k.max);
  // plan.dp's 0 and plan.expert_tp's 0 lie outside the range: each means another knob's value
  if (k.fallback < k.min) return {range, "`" + std::to_string(k.fallback) + "` (derived)"};
  return {range, "`" + std::to_string(k.fallback) + "`"};
}
Row row_of(const BoolKnob& k) { return {"`true`, `false`", k.fallback ? "`true`" : "`false`"}; }
template <class E>
Row row_of(const ChoiceKnob<E>& k) {
  std::string values;
  for (int i = 0; i < k.count; ++i) values += (i ? ", `" : "`") + std::string(to_string(k.values[i])) + "`";
  return {values, "`" + std::string(to_string(k.fallback)) + "`"};
}
Row row_of(const RatioKnob& k) {
  PlanKnobs p;
  p.*k.member = k.min;
  const std::string low = knob_text(k, p);
  p.*k.member = k.max;
  const std::string high = knob_text(k, p);
  p.*k.member = k.fallback;
  return {"number, " + low + " to " + high, "`" + knob_text(k, p) + "`"};
}
Row row_of(const ModuleSetKnob& k) {
  std::string values;
  for (RecomputeModule m : kRecomputeModules)
    values += (values.empty() ? "list of `" : ", `") + std::string(to_string(m)) + "`";
  PlanKnobs p;
  p.*k.member = k.fallback;
  return {values, "`" + knob_text(k, p) + "`"};
}
Row row_of(const LayerListKnob& k) {
  return {"list of layer counts, one a stage, each " + std::to_string(k.min) + " to " + std::to_string(k.max),
          "even split"};
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
