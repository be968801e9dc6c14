// The hardware-profile fields a run-level fit (`moesim fit runs`) may move: contention factors,
// per-step and per-kernel fixed costs, per-pass and per-kernel-class efficiency scales. One table,
// each field with its physical range and what it means; every other profile number stays
// kernel-level (DESIGN.md "Calibration: two honest tiers").
#pragma once

#include <string>
#include <vector>

namespace moesim {

struct FittableField {
  std::string name;  // scenario path of the quantity, e.g. hardware.host.step_overhead_us
  double lower = 0;  // physical range the fit stays within (inside the profile parser's range)
  double upper = 0;
  std::string unit;       // "fraction", "us", "ratio"
  std::string meaning;    // what the field does to a replay
  std::string why_range;  // where the bounds come from
};

// Every fittable field, in table order.
const std::vector<FittableField>& fittable_fields();

// The field named `name`; InputError naming `origin` (e.g. "--free") with the closest name and
// the whole list for an unknown one.
const FittableField& fittable_field(const std::string& name, const std::string& origin);

// The scenario override path of the field's number ("<name>.value").
std::string value_path(const FittableField& field);

}  // namespace moesim
