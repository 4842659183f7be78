#pragma once
// The executor tags every allocation with a report memory category (models/memory_category.hpp,
// shared with the simulator), so the measured breakdown lines up with the predicted one.
#include "models/memory_category.hpp"

namespace twinsim::exec {

using twinsim::category_name;
using twinsim::kMemCategories;
using twinsim::kMemCategoryCount;
using twinsim::MemCategory;

}  // namespace twinsim::exec
