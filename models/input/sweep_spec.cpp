#include "models/input/sweep_spec.hpp"

#include <cmath>
#include <optional>

#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/input/overrides.hpp"

namespace moesim {

namespace {

std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  bool quoted = false;
  std::string cur;
  for (char c : text) {
    if (c == '"') quoted = !quoted;
    if (!quoted && (c == '[' || c == '{')) ++depth;
    if (!quoted && (c == ']' || c == '}')) --depth;
    if (c == ',' && depth == 0 && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<nlohmann::json> expand_value(const std::string& text, const std::string& expr) {
  const auto dots = text.find("..");
  if (dots != std::string::npos) {
    const std::string lo = text.substr(0, dots);
    std::string hi = text.substr(dots + 2), step;
    if (const auto plus = hi.find('+'); plus != std::string::npos) {
      step = hi.substr(plus + 1);
      hi = hi.substr(0, plus);
    }
    const auto a = size_value(lo), b = size_value(hi);
    const double stride = step.empty() ? 0.0 : size_value(step).value_or(-1.0);  // 0: doubling
    if (!a || !b || !std::isfinite(*a) || !std::isfinite(*b) || !std::isfinite(stride) || *a <= 0 || *b < *a ||
        stride < 0 || (!step.empty() && stride == 0)) {
      throw InputError(
          "--vary", expr,
          "bad range '" + text +
              "'; allowed: A..B (doubling from A to B) or A..B+S (step S), with 0 < A <= B and S > 0, all finite");
    }
    const double count = stride > 0 ? std::floor((*b - *a) / stride) + 1 : std::floor(std::log2(*b / *a)) + 1;
    if (count > static_cast<double>(kMaxSweepPoints)) {
      throw InputError("--vary", expr,
                       "range '" + text + "' has " + brief(count) + " values; at most " +
                           std::to_string(kMaxSweepPoints) + " points per sweep (use a larger step)");
    }
    std::vector<nlohmann::json> out;
    for (double v = *a; v <= *b * (1 + 1e-12) && out.size() < kMaxSweepPoints; v = stride > 0 ? v + stride : v * 2)
      out.push_back(number_json(v));
    return out;
  }
  if (auto size = size_literal(text)) return {*size};
  check_json_depth(text, "--vary");
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) parsed = text;
  return {parsed};
}

}  // namespace

std::string override_text(const std::string& path, const nlohmann::json& value) { return path + "=" + value.dump(); }

SweepAxis parse_axis(const std::string& expr) {
  const auto eq = expr.find('=');
  if (!is_valid_utf8(expr)) throw InputError("--vary", "", "the expression is not valid UTF-8 text");
  if (eq == std::string::npos || eq == 0) throw InputError("--vary", expr, "expected PATH=V1,V2,... or PATH=A..B");
  SweepAxis axis;
  axis.path = expr.substr(0, eq);
  const std::string list = expr.substr(eq + 1);
  if (list.empty()) throw InputError("--vary", expr, "empty value list");
  for (const auto& item : split_top_level(list)) {
    if (item.empty()) throw InputError("--vary", expr, "empty value in the list");
    for (auto& v : expand_value(item, expr)) axis.values.push_back(std::move(v));
  }
  return axis;
}

SweepSpec parse_sweep_block(const JsonReader& in, const nlohmann::json& raw) {
  SweepSpec spec;
  if (in.has("axes")) {
    const auto& axes = raw.at("axes");
    if (!axes.is_array()) in.fail("axes", "expected an array of {\"path\", \"values\"} objects");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const JsonReader a(axes[i], in.file(), in.child_path("axes[" + std::to_string(i) + "]"));
      SweepAxis axis;
      axis.path = a.string("path");
      const bool has_values = a.has("values");  // asked first, so an unknown key lists both forms
      if (a.has("range")) {
        if (has_values) a.fail("range", "give \"values\" or \"range\", not both");
        axis = parse_axis(axis.path + "=" + a.string("range"));
      } else {
        if (!has_values)
          a.fail("values", "required: a non-empty array of values (or a \"range\" such as \"128Ki..4Mi\")");
        const auto& values = axes[i].at("values");
        if (!values.is_array() || values.empty()) a.fail("values", "expected a non-empty array of values");
        axis.values.assign(values.begin(), values.end());
      }
      a.finish();
      spec.axes.push_back(std::move(axis));
    }
  }
  if (in.has("include")) {
    const auto& include = raw.at("include");
    if (!include.is_array()) in.fail("include", "expected an array of {path: value} objects");
    for (std::size_t i = 0; i < include.size(); ++i) {
      if (!include[i].is_object()) {
        throw InputError(in.file(), in.child_path("include[" + std::to_string(i) + "]"),
                         "expected an object of path: value");
      }
      PointOverrides p;
      for (const auto& [k, v] : include[i].items()) p.emplace_back(k, v);
      spec.include.push_back(std::move(p));
    }
  }
  in.finish();
  return spec;
}

CompareSpec parse_compare_block(const JsonReader& in, const nlohmann::json& raw) {
  CompareSpec spec;
  if (in.has("designs")) {
    const auto& designs = raw.at("designs");
    if (!designs.is_array()) in.fail("designs", "expected an array of design names such as \"ddp+ep8\"");
    for (const auto& d : designs) {
      if (!d.is_string()) in.fail("designs", "expected design names such as \"ddp+ep8\"");
      spec.designs.push_back(d.get<std::string>());
    }
  }
  in.finish();
  return spec;
}

}  // namespace moesim
