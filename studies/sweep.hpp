// Sweeps: the Cartesian product of axes (plus explicitly included points), each point composed
// from one scenario source with its changes and simulated with the full replay and ledger, on a
// pool of threads. The result is indexed by point, so it is the same whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"
#include "studies/point_list.hpp"

namespace moesim {

struct SweepPoint {
  std::size_t index = 0;
  PointOverrides values;
  bool ok = false;
  std::string error;  // why the point is an impossible plan
  std::optional<Scenario> scenario;
  std::optional<StepResult> result;
};

struct SweepResult {
  std::vector<SweepPoint> points;
};

using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;
// Takes each finished point, in point order (whatever the thread count), one at a time, on
// whichever worker thread hands it on and outside the runner's lock (its work overlaps the other
// threads' simulations).
using SweepSink = std::function<void(SweepPoint&& point)>;

// Adds `axis` to the sweep; an axis on the same path is replaced, not multiplied (returns true
// then, so the caller can say so).
bool set_axis(SweepSpec& spec, SweepAxis axis);

// Every point's changes (made on demand: point_list.hpp), each distinct point once: repeated
// values of an axis and included points the product already has are dropped (first occurrence
// kept). Malformed axes (a missing path, an empty value list, a value of the wrong type) throw
// InputError before any point runs; an impossible plan at one point is recorded in that point
// and the sweep goes on.
PointList expand_points(const ScenarioSource& source, const SweepSpec& spec);
// Points [first, first + count) of `points`, on `jobs` threads, handed to `sink` in order as they
// finish and dropped here: memory is bounded by the points in flight, not the sweep's size. An
// exception from the sink stops the sweep and is rethrown.
// `record`: what each point's Scenario::resolved holds (compose).
void run_points_in_order(const ScenarioSource& source, const PointList& points, std::size_t first, std::size_t count,
                         int jobs, const SweepProgress& progress, const SweepSink& sink,
                         ResolvedRecord record = ResolvedRecord::all_sections);
// The same, every point kept.
SweepResult run_points(const ScenarioSource& source, const PointList& points, std::size_t first, std::size_t count,
                       int jobs, const SweepProgress& progress);

// One point, as run_points runs it.
SweepPoint run_point(const ScenarioSource& source, PointOverrides point, std::size_t index,
                     ResolvedRecord record = ResolvedRecord::all_sections);
// The same where `twin`, a point already run, may give the same step (sim's same_step): the
// point is composed and takes the twin's replayed step with its own memory ledger; simulated
// when it is not the twin's.
SweepPoint run_twin_point(const ScenarioSource& source, PointOverrides point, std::size_t index, const SweepPoint& twin,
                          ResolvedRecord record = ResolvedRecord::all_sections);
// The same for a point `composed` makes from `values` by its own means (a plan search composes
// its typed candidate, `values` being the changes reports print for it).
SweepPoint run_composed_point(const std::function<Scenario(const PointOverrides&)>& composed, PointOverrides values,
                              std::size_t index, const SweepPoint& twin);

}  // namespace moesim
