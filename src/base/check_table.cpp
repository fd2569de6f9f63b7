// The table of checks (kChecks, declared in check_plan.hpp) from the rows of
// check_table.hpp. Defined here, not in check_plan.cpp, so that the plan
// (whose types the rows use) and the rows do not include each other.
#include "base/check_table.hpp"

namespace gpumem {

const NameTable<CheckKind> kChecks{"check", kCheckRows, "checks"};

}  // namespace gpumem
