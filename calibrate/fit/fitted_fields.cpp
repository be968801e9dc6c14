#include "calibrate/fit/fitted_fields.hpp"

#include <cmath>
#include <cstdio>

#include "models/common/errors.hpp"
#include "models/common/json_reader.hpp"

namespace moesim::fit {

void FitOutput::add(const FitOutput& other) {
  updates.insert(updates.end(), other.updates.begin(), other.updates.end());
  curves.insert(curves.end(), other.curves.begin(), other.curves.end());
  warnings.insert(warnings.end(), other.warnings.begin(), other.warnings.end());
}

std::string FitInputs::provenance(const std::set<std::string>& names) const {
  std::string out;
  for (const auto& f : files) {
    if (!names.count(f.file)) continue;
    const auto& e = f.environment;
    out += (out.empty() ? "" : "; ") + f.file + " (" + (e.device_name.empty() ? "device not recorded" : e.device_name) +
           ", " + (e.nccl_version.empty() || e.nccl_version == "unknown" ? "" : "NCCL " + e.nccl_version + ", ") +
           (e.date_utc == "unknown" ? std::string("date not recorded") : e.date_utc) + ")";
  }
  return out;
}

double round_sig(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::pow(10.0, digits - 1 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * mag) / mag;
}

std::string sig4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string implausible(double value, double datasheet, const std::string& what, const std::string& unit,
                        const std::string& profile, std::vector<std::string>& warnings) {
  const double fraction = value / datasheet;
  if (fraction >= kMinPlausibleFraction && fraction <= 1) return "";
  const std::string why = sig4(value) + " " + unit + " is " + sig4(fraction) + " of the datasheet " + sig4(datasheet) +
                          (fraction > 1 ? " (above it)" : " (under " + sig4(kMinPlausibleFraction) + " of it)");
  warnings.push_back(what + ": " + why + " of " + profile + ": implausible for that GPU; not written");
  return "not mapped: " + why;
}

nlohmann::ordered_json fitted_quantity(double value, const std::string& source) {
  nlohmann::ordered_json q;
  q["value"] = round_sig4(value);
  q["kind"] = "fitted";
  q["source"] = source;
  return q;
}

HardwareProfile apply_updates(nlohmann::ordered_json& profile, const std::vector<FieldUpdate>& updates,
                              const std::string& fitted_on, const std::string& base_profile) {
  for (const auto& u : updates) {
    nlohmann::ordered_json* node = &profile;
    for (std::size_t i = 0; i + 1 < u.path.size(); ++i) node = &(*node)[u.path[i]];
    if (u.value.is_null()) {
      node->erase(u.path.back());  // a field the fit makes redundant
    } else {
      (*node)[u.path.back()] = u.value;
    }
  }
  // One sentence names the fit; a refit replaces it rather than appending another.
  const std::string marker = " Fields of kind \"fitted\" come from moesim fit on ";
  std::string description = profile.value("description", std::string());
  if (auto at = description.find(marker); at != std::string::npos) description.resize(at);
  profile["description"] = description + marker + fitted_on + ".";
  // The result must load exactly as any profile does.
  const nlohmann::json plain = nlohmann::json::parse(profile.dump());
  try {
    return parse_hardware_profile(JsonReader(plain, "<fitted profile>", ""));
  } catch (const InputError& e) {
    throw InputError(base_profile, e.path(), "the fitted profile does not validate: " + e.message());
  }
}

nlohmann::ordered_json table_json(const std::string& x_key, const std::string& y_key,
                                  const std::vector<TablePoint>& pts, const std::string& source) {
  nlohmann::ordered_json t;
  t["kind"] = "fitted";
  t["source"] = source;
  t["points"] = nlohmann::ordered_json::array();
  for (const auto& p : pts) t["points"].push_back({{x_key, round_sig(p.x, 6)}, {y_key, round_sig4(p.y)}});
  return t;
}

std::string residual_text(double rms_rel, double max_rel, int points) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "residual rms %.2f%%, max %.2f%% over %d points", 100 * rms_rel, 100 * max_rel,
                points);
  return buf;
}

}  // namespace moesim::fit
