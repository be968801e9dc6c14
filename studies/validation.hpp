// Validation against published measurements: each record of a dataset is simulated (or its
// ledger / layout / schedule computed) and compared with the measurement and its tolerance.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/json_reader.hpp"

namespace moesim {

struct ValidationCheck {
  std::string metric;  // mfu, tokens_per_s_per_gpu, oom, bytes, largest, ...
  double predicted = 0;
  double measured = 0;
  double error = 0;      // mfu: points; tokens: relative; exact metrics: difference
  double tolerance = 0;  // same unit as error
  bool pass = false;
  // A published range [measured_low, measured_high] instead of one number: `measured` is its
  // point nearest the prediction and `error` the distance outside it (0 inside).
  bool range = false;
  double measured_low = 0, measured_high = 0;
};

struct ValidationRecord {
  std::string id;
  std::string kind;
  std::string source;
  std::string known_gap;  // non-empty: a documented gap, reported but not failing
  std::vector<ValidationCheck> checks;
  std::string error;  // the record could not be evaluated
  bool pass() const;
};

// The checks of one metric over a dataset ("mfu" pools every MFU convention).
struct MetricSummary {
  std::size_t checks = 0;
  double mean_abs_error = 0, max_abs_error = 0;
  std::size_t outside_tolerance = 0;
};

struct ValidationReport {
  std::string name;
  std::string file;
  std::vector<ValidationRecord> records;
  std::size_t failures() const;                          // failing records without a documented gap
  std::size_t known_gaps() const;                        // failing records with one
  std::size_t closed_gaps() const;                       // records with a documented gap that now pass
  std::map<std::string, MetricSummary> summary() const;  // by metric
};

struct MemoryLedger;
struct StageLedger;
// The largest stage's peak in GiB (`field`: peak_allocated or peak_reserved), as a measured peak
// is the largest over ranks (torch.cuda.max_memory_allocated / _reserved on the worst rank).
double largest_stage_peak_GiB(const MemoryLedger& ledger, double StageLedger::*field);

// The datasets `moesim validate` checks when given none, relative to the repository root.
std::vector<std::string> default_validation_datasets();

// How a record names its run, for every reader of the datasets (validate, the HTML overlay):
// its scenario file, relative to the dataset's folder ("" when it has none), and its own `set`
// overrides as --set texts (`raw`: the record's JSON).
std::string record_scenario(const std::string& dataset, const JsonReader& rec);
std::vector<std::string> record_sets(const JsonReader& rec, const nlohmann::json& raw);

// A kernel record's predicted rate (TFLOP/s, in the record's FLOP count; GB/s of algorithm
// bandwidth for "ep_dispatch" and "ep_combine", whose pass is ""): the profile file
// `profile` (the record's bundled name or path, resolved), the kernel ("gemm", "attention"), its pass and its shape
// (the record's `shape` object, read and finished by the pricer). studies/ prices no kernel: the caller that owns the
// cost models (moesim validate) passes one; without it a kernel record is not evaluated.
using KernelPricer = std::function<double(const std::string& profile, const std::string& kernel,
                                          const std::string& pass, const JsonReader& shape)>;

// Throws InputError for a malformed dataset (path of the offending entry). `extra_sets` are
// --set overrides applied to every record's scenario after its own (sensitivity studies).
ValidationReport validate_dataset(const std::string& file, const std::vector<std::string>& extra_sets = {},
                                  const KernelPricer& price_kernel = {});

// Sensitivity of a dataset to each assumed profile number: every quantity with kind
// "assumption" in the hardware profile of the dataset's scenarios, scaled by (1 -+ fraction).
struct SensitivityRow {
  std::string path;  // e.g. hardware.memory.fragmentation_fraction.value
  double value = 0;
  double mean_mfu_error[3] = {0, 0, 0};  // |error| in points at -fraction, as is, +fraction
  std::size_t oom_right[3] = {0, 0, 0};
  double mean_memory_error[3] = {0, 0, 0};  // |relative error| of peak-memory checks
  std::size_t memory_checks = 0;
  std::size_t oom_total = 0;
};
std::vector<SensitivityRow> sensitivity(const std::string& dataset, const std::string& scenario, double fraction);

}  // namespace moesim
