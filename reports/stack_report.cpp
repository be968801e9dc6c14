#include "reports/stack_report.hpp"

#include <sstream>

#include "models/common/units.hpp"
#include "reports/text_format.hpp"

namespace moesim {

namespace {

// A value as a plan would write it, strings without their quotes.
std::string value_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::string stack_line(const StackUse& use) {
  if (use.name.empty()) return "";
  std::string out = "stack    " + use.name + " (" + use.code + ")";
  if (use.taken.empty()) return out + ": every value it sets is the plan's own\n";
  out += ":";
  for (std::size_t i = 0; i < use.taken.size(); ++i) {
    out += (i == 0 ? " " : ", ") + use.taken[i].path + "=" + value_text(use.taken[i].value);
  }
  out += "\n";
  for (const StackSetting& s : use.taken) {
    if (!s.note.empty()) out += "         " + s.path + ": " + s.note + "\n";
  }
  return out;
}

nlohmann::json stack_json(const StackUse& use) {
  nlohmann::json taken = nlohmann::json::array();
  for (const StackSetting& s : use.taken) {
    nlohmann::json one = {{"path", s.path}, {"value", s.value}, {"source", s.source}};
    if (!s.note.empty()) one["note"] = s.note;
    taken.push_back(std::move(one));
  }
  return {{"name", use.name}, {"code", use.code}, {"taken", taken}};
}

std::string stacks_table() {
  std::ostringstream os;
  for (const auto& name : stack_presets().registration_order()) {
    const StackPreset& stack = stack_presets().get(name);
    os << name << ": " << stack.description() << "\n  read from " << stack.code() << "\n";
    for (const StackValue& v : stack.values()) {
      os << "  plan." << v.path << " = " << value_text(nlohmann::json::parse(v.value));
      if (!v.design.empty()) os << " (design " << v.design << ")";
      os << "\n      " << v.source << "\n";
    }
    os << "\n";
  }
  return os.str();
}

std::string stack_comparison_text(const StackComparison& c) {
  std::ostringstream os;
  for (std::size_t i = 0; i < c.points.points.size(); ++i) {
    const SweepPoint& p = c.points.points[i];
    os << "#" << i << " " << c.stacks[i] << " sets";
    for (const auto& [path, value] : p.values) {
      if (path != "plan.stack") os << " " << path.substr(5) << "=" << value_text(value);
    }
    os << "\n";
  }
  const SweepPoint& first = c.points.points.front();
  for (std::size_t i = 1; i < c.points.points.size(); ++i) {
    const SweepPoint& p = c.points.points[i];
    if (!first.ok || !p.ok) continue;
    const double step = p.result->step_time_s - first.result->step_time_s;
    const double memory = p.result->ledger.stages[p.result->ledger.worst_stage].peak_allocated -
                          first.result->ledger.stages[first.result->ledger.worst_stage].peak_allocated;
    os << c.stacks[i] << " vs " << c.stacks[0] << ": step " << fmt("%+.1f", step * 1e3) << " ms, peak allocated "
       << fmt("%+.2f", memory / kGiB) << " GiB";
    for (const PhaseDifference& d : c.against_first[i]) {
      const std::string ms = fmt("%+.1f", (d.best_s - d.runner_up_s) * 1e3);
      if (ms != "+0.0" && ms != "-0.0") os << "; " << d.phase << " " << ms << " ms";  // shown only if it shows
    }
    os << "\n";
  }
  return os.str();
}

nlohmann::json stacks_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& name : stack_presets().registration_order()) {
    const StackPreset& stack = stack_presets().get(name);
    nlohmann::json values = nlohmann::json::array();
    for (const StackValue& v : stack.values()) {
      nlohmann::json value = {{"path", v.path}, {"value", nlohmann::json::parse(v.value)}, {"source", v.source}};
      if (!v.design.empty()) value["design"] = v.design;
      values.push_back(std::move(value));
    }
    out.push_back({{"name", name}, {"description", stack.description()}, {"code", stack.code()}, {"values", values}});
  }
  return {{"schema", "moesim-stacks/1"}, {"stacks", out}};
}

}  // namespace moesim
