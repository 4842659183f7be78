#include "scenario/build.hpp"

#include "scenario/model_checks.hpp"
#include "scenario/validate.hpp"

namespace twinsim {

Scenario validated_scenario(Scenario s) {
  check_model(s.model, "model");
  resolve_and_validate(s);
  return s;
}

}  // namespace twinsim
