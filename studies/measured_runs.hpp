// Measured runs of a user's own trainer (moesim-runs/1, schemas/moesim-runs.schema.json): each run
// is a scenario (a file or inline, plus `set` overrides) and what was measured on it (step time or
// tokens/s/GPU, MFU with its FLOP convention, peak allocated / reserved memory, exposed time per
// phase), with its source. Read strictly; each run's scenario is composed once, so a bad one is an
// error before any fit starts. predict_run replays one run with profile changes (a fit's trial).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/input/scenario.hpp"

namespace moesim {

struct RunMetric {
  std::string name;  // step_time_s, tokens_per_s_per_gpu, mfu, peak_allocated_GiB, peak_reserved_GiB,
                     // phase.<phase>_s (exposed seconds of one phase on the critical rank)
  double measured = 0;
};

struct MeasuredRun {
  std::string id;
  std::string source;           // where the numbers come from (a log, a figure)
  std::string path;             // "runs[3]", for errors and reports
  std::string flop_convention;  // MFU's convention ("" when no MFU was measured)
  ScenarioSource scenario;      // its overrides and the caller's (the base profile) applied
  std::vector<RunMetric> metrics;
  // What the run is, for extrapolation warnings: its design name, GPU count, routed experts and
  // microbatches per optimizer step.
  std::string design;
  std::int64_t gpus = 0;
  std::int64_t experts = 0;  // 0 for a dense model
  std::int64_t microbatches = 0;
};

struct RunsFile {
  std::string file;
  std::string name;
  std::vector<MeasuredRun> runs;
};

// Throws InputError naming `file` and the JSON path (runs[i].measured.KEY, runs[i].scenario, ...):
// unknown keys, measurements without a unit in their key, MFU without its FLOP convention, no
// measurement, duplicate ids, a scenario that does not compose. `extra_sets` are --set texts applied
// to every run after its own (`hardware=PROFILE` swaps in the base profile).
RunsFile read_runs(const std::string& file, const std::vector<std::string>& extra_sets);

// Parses a moesim-runs/1 document already read (tests, schema probes); `file` names it.
RunsFile parse_runs(const nlohmann::json& doc, const std::string& file, const std::vector<std::string>& extra_sets);

// The predicted value of each of the run's metrics (same order) with `changes` applied to its
// scenario (a fit's trial values). Throws InputError when a change makes the profile invalid.
std::vector<double> predict_run(const MeasuredRun& run, const std::vector<ScenarioChange>& changes);

}  // namespace moesim
