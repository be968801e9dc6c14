#include "reports/stack_report.hpp"

#include <sstream>

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
  return out + "\n";
}

nlohmann::json stack_json(const StackUse& use) {
  nlohmann::json taken = nlohmann::json::array();
  for (const StackSetting& s : use.taken) taken.push_back({{"path", s.path}, {"value", s.value}, {"source", s.source}});
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
