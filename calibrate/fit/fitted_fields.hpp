// What the fitters produce: profile fields to replace (each a "fitted" Quantity or Table with
// its provenance) and one report line per fitted curve, with its residuals.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/fit/measurements.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim::fit {

struct FitOptions {
  // NCCL algorithm behind all_reduce measurements that do not name one ("" = only where it is
  // unambiguous: one NVLink domain and no NVLS in the base profile).
  std::string all_reduce_algorithm;
  double gemm_min_nk = 4096;                 // dense GEMMs with N and K at least this build the table
  double hbm_min_bytes = 256.0 * (1 << 20);  // memory-kernel points at least this large (past L2)
  bool force_device = false;                 // fit measurements of another GPU than --base's (a warning)
};

// One profile field, by its JSON path from the profile root, and its new JSON value (null: the
// field is removed).
struct FieldUpdate {
  std::vector<std::string> path;
  nlohmann::ordered_json value;
  std::string summary;  // short, for the table: "0.8123", "12 points", ...
};

struct CurveReport {
  std::string curve;  // "all_reduce ring n=8 (1 domain)", "gemm TFLOPs by rows", ...
  int points = 0;
  std::string model;   // "21.3 us + S / 371 GB/s (busbw 650 GB/s)"
  double rms_rel = 0;  // relative residuals of the points against the fitted model
  double max_rel = 0;
  std::string field;  // the profile field it set, or "" when not mapped
  std::string note;   // why not mapped, or what was assumed
  // Collective curves: what the fit must reproduce, checked against the cost model (fit_check.hpp).
  // (Default member initializers: the other fitters' brace-initialised reports leave these out.)
  std::string kind = {}, algorithm = {};
  int ranks = 0, domains = 1;
  double largest_bytes = 0, largest_time_us = 0;
  double largest_busbw_measured = 0, largest_busbw_fitted = 0;  // GB/s
  double largest_busbw_model = 0;                               // the cost model on the fitted profile, its own pick
  std::string model_pick = {};                                  // that pick ("" when not checked)
  double largest_busbw_pinned = 0;                              // the cost model with the fitted algorithm forced
  bool algorithm_recorded = false;  // named by the log (NCCL_ALGO) or --all-reduce-algorithm
};

struct FitOutput {
  std::vector<FieldUpdate> updates;
  std::vector<CurveReport> curves;
  std::vector<std::string> warnings;  // printed on stderr by `moesim fit`
  void add(const FitOutput& other);
};

// The measurement files and the base profile every fitter reads.
struct FitInputs {
  std::vector<MeasurementFile> files;
  HardwareProfile base;
  FitOptions options;
  // "FILE (DEVICE, DATE)" for each named file, "; "-joined: the provenance of a fitted field.
  std::string provenance(const std::set<std::string>& file_names) const;
};

// A fitted rate under this fraction of its datasheet figure is not a property of the profile's
// hardware: NCCL reaches 0.7-0.9 of NVLink and over 0.9 of a NIC rail, cuBLAS 0.6-0.8 of the
// dense peak and copies about 0.9 of HBM at large sizes (the shipped profiles' sources). Below a
// tenth the measurement ran on other hardware or never reached the regime the field describes.
inline constexpr double kMinPlausibleFraction = 0.1;

// "" when value / datasheet lies in [kMinPlausibleFraction, 1]; else why not (the curve's note),
// with a warning for stderr naming `what` and the profile.
std::string implausible(double value, double datasheet, const std::string& what, const std::string& unit,
                        const std::string& profile, std::vector<std::string>& warnings);

// Writes each update into `profile` (creating a section the base lacks, e.g. nvls), says in its
// description what it was fitted on (a refit replaces that sentence), and parses the result as
// any profile is parsed: InputError naming `base_profile` when it does not validate.
HardwareProfile apply_updates(nlohmann::ordered_json& profile, const std::vector<FieldUpdate>& updates,
                              const std::string& fitted_on, const std::string& base_profile);

// {"value", "kind": "fitted", "source"}, the value rounded to 4 significant digits.
nlohmann::ordered_json fitted_quantity(double value, const std::string& source);
// {"kind": "fitted", "source", "points": [{x_key, y_key}...]}: a fitted profile table (x to 6
// significant digits, y to 4).
nlohmann::ordered_json table_json(const std::string& x_key, const std::string& y_key,
                                  const std::vector<TablePoint>& pts, const std::string& source);
// Residual wording shared by every source: "residual rms 1.2%, max 3.4% over 23 points".
std::string residual_text(double rms_rel, double max_rel, int points);
// Four significant digits (deterministic text for sources and the table).
std::string sig4(double v);
double round_sig(double v, int digits);
inline double round_sig4(double v) { return round_sig(v, 4); }

}  // namespace moesim::fit
