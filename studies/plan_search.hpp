// `moesim plan`: the fastest (or most efficient, or roomiest) plan that fits. Candidates the
// rules refuse are counted by reason; the rest are composed and screened without a replay
// (memory ledger, step-time lower bound: sim/step_simulation.hpp screen_plan); plans that do
// not fit are dropped; the fitting ones are replayed best bound first, in rounds of a fixed
// size, until no remaining plan's bound can enter the top K or beat its design family's best.
// The rounds do not depend on the thread count, so the ranking and the counts are the same at
// any -j. Pruning loses nothing: a pruned plan's bound is already worse than a replayed one's
// score (the bound holds by construction and is tested against the replay). Plans that differ
// only in what the memory ledger alone reads share one bound and one replay (studies/plan_twins.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "studies/plan_phases.hpp"
#include "studies/plan_record.hpp"
#include "studies/plan_share.hpp"
#include "studies/plan_space.hpp"
#include "studies/sweep.hpp"

namespace moesim {

enum class PlanObjective { tokens_per_s, mfu, memory_headroom };
PlanObjective parse_objective(const std::string& name);  // throws InputError naming --objective
std::string_view name_of(PlanObjective o);

// Where a search is: `stage` "screening" (done of total candidates that passed the rules) or
// "replaying" (done of at most total fitting plans); called under a lock, done increasing.
using PlanProgress = std::function<void(std::string_view stage, std::size_t done, std::size_t total)>;

struct PlanSearchOptions {
  PlanObjective objective = PlanObjective::tokens_per_s;
  std::size_t top_k = 5;
  int jobs = 1;
  // A plan fits when its worst stage keeps at least this much of the GPU's memory free (0: when
  // it does not run out of memory).
  double min_headroom_GiB = 0;
  PlanShare share;  // one process unless an MPI launcher started several
  PlanProgress progress;
};

struct PlanCounts {
  std::size_t enumerated = 0, refused_by_rule = 0, pruned_by_memory = 0, pruned_by_bound = 0, replayed = 0;
};

struct PlanFamilyBest {
  std::string family;
  std::optional<std::size_t> record;    // index into PlanSearchResult::records
  double relative_to_best = 0;          // its tokens/s/GPU over the best plan's
  std::vector<PhaseDifference> phases;  // where the best plan wins against it (empty for the best's family)
};

struct PlanSearchResult {
  PlanSpace space;
  PlanSearchOptions options;
  std::vector<PlanCandidate> candidates;
  std::vector<PlanRecord> records;              // candidates that passed the rules, in order
  std::map<std::string, std::size_t> refusals;  // reason -> count (rules and compose)
  PlanCounts counts;
  std::vector<std::size_t> top;          // record indices, best first
  std::vector<SweepPoint> top_points;    // the replayed points of `top`, same order
  std::vector<PlanFamilyBest> families;  // in design-axis order
  // The best plan of the second place (the first that differs in step), an index into `top`.
  std::optional<std::size_t> runner_up;
  std::vector<PhaseDifference> runner_up_phases;  // empty with fewer than two places
  // When the best plan uses TP: the best replayed plan without it (a record index) and where the
  // best gains on it, phase by phase (what TP buys).
  std::optional<std::size_t> best_without_tp;
  double without_tp_step_difference_s = 0;  // its step time minus the best's
  std::vector<PhaseDifference> without_tp_phases;
  // The replayed plans that fit and that no other such plan beats with as little memory or less,
  // as record indices by peak reserved memory ascending (each raises the best tokens/s/GPU so far).
  std::vector<std::size_t> frontier;
};

PlanSearchResult search_plans(const ScenarioSource& source, const PlanSpace& space, const PlanSearchOptions& options);

}  // namespace moesim
