#include "calibrate/fit/fitter.hpp"

#include <algorithm>
#include <cstdio>

#include "calibrate/fit/attention_fit.hpp"
#include "calibrate/fit/collective_fit.hpp"
#include "calibrate/fit/compute_fit.hpp"
#include "calibrate/fit/fit_check.hpp"
#include "calibrate/fit/interference_fit.hpp"
#include "calibrate/fit/low_precision_fit.hpp"
#include "calibrate/fit/power_limit_fit.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"

namespace moesim::fit {

namespace {

std::string join_path(const std::vector<std::string>& p) {
  std::string s;
  for (const auto& k : p) s += (s.empty() ? "" : ".") + k;
  return s;
}

}  // namespace

FitResult fit_profile(const std::vector<std::string>& measurement_files, const std::string& base_profile,
                      const FitOptions& options) {
  if (measurement_files.empty()) throw InputError("", "", "no measurement files given");
  FitInputs in;
  in.options = options;
  nlohmann::ordered_json profile = read_ordered_json_file(base_profile);
  {
    const nlohmann::json plain = nlohmann::json::parse(profile.dump());
    in.base = parse_hardware_profile(JsonReader(plain, base_profile, ""));
  }
  for (const auto& path : measurement_files) {
    in.files.push_back(read_measurements(path));
    const auto& a = in.files.front().environment;
    const auto& b = in.files.back().environment;
    // One profile describes one node type: refuse to mix GPU models.
    if (!a.device_name.empty() && !b.device_name.empty() && a.device_name != b.device_name) {
      throw InputError(path, "environment.device.name",
                       "\"" + b.device_name + "\" differs from \"" + a.device_name + "\" in " + in.files.front().file +
                           ": fit one node type at a time");
    }
  }
  std::vector<std::string> warnings;
  check_devices(in, base_profile, warnings);
  FitOutput out = fit_collectives(in);
  out.add(fit_compute(in));
  out.add(fit_interference(in));
  out.add(fit_attention(in));
  out.add(fit_low_precision(in));
  out.add(fit_power_limit(in));
  warnings.insert(warnings.end(), out.warnings.begin(), out.warnings.end());
  if (out.updates.empty()) {
    std::string why;
    for (const auto& c : out.curves) {
      if (!c.note.empty()) why += "; " + c.curve + ": " + c.note;
    }
    throw InputError(measurement_files.front(), "",
                     "no measurement could be fitted to a profile field (need collective sweeps, dense GEMMs, "
                     "grouped GEMMs, memory kernels, interference, attention, FP8 GEMM or sustained GEMM records)" +
                         why);
  }
  std::string files;
  for (const auto& f : in.files) files += (files.empty() ? "" : ", ") + f.file;
  const HardwareProfile fitted = apply_updates(profile, out.updates, files, base_profile);
  check_against_cost_model(fitted, out.curves, warnings);
  return {profile, out.curves, out.updates, warnings, check_sequences(in.files, fitted)};
}

std::string format_fit_table(const FitResult& r) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %6s  %-44s %7s %7s  %s\n", "curve", "points", "fit", "rms", "max",
                "profile field / note");
  os << line;
  for (const auto& c : r.curves) {
    std::string target = c.field.empty() ? "-" : c.field;
    if (!c.note.empty()) target += " (" + c.note + ")";
    std::snprintf(line, sizeof line, "%-40s %6d  %-44s %6.2f%% %6.2f%%  %s\n", c.curve.c_str(), c.points,
                  c.model.c_str(), 100 * c.rms_rel, 100 * c.max_rel, target.c_str());
    os << line;
  }
  os << "(* algorithm not recorded with the measurements: assumed; rms and max: relative residuals)\n\n";
  bool header = false;
  for (const auto& c : r.curves) {
    if (c.kind.empty() || c.largest_bytes <= 0) continue;
    if (!header) {
      std::snprintf(line, sizeof line, "%-40s %12s  %10s %10s %10s %10s  %s\n", "largest size", "bytes", "measured",
                    "fitted", "model:alg", "model:pick",
                    "(busbw GB/s; the cost model on the fitted profile: the fitted algorithm forced, its own pick)");
      os << line;
      header = true;
    }
    const bool checked = !c.model_pick.empty();
    const std::string pinned = checked ? sig4(c.largest_busbw_pinned) : "-";
    const std::string model = checked ? sig4(c.largest_busbw_model) : "-";
    std::snprintf(line, sizeof line, "%-40s %12.0f  %10s %10s %10s %10s  %s\n", c.curve.c_str(), c.largest_bytes,
                  sig4(c.largest_busbw_measured).c_str(), sig4(c.largest_busbw_fitted).c_str(), pinned.c_str(),
                  model.c_str(), c.model_pick.c_str());
    os << line;
  }
  if (header) os << "\n";
  for (const auto& u : r.updates) os << "  " << join_path(u.path) << " = " << u.summary << "\n";
  if (!r.sequences.empty()) os << "\n" << format_sequence_checks(r.sequences);
  return os.str();
}

}  // namespace moesim::fit
