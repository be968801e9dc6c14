// What screening and replaying one candidate give the plan search (studies/plan_search.cpp), and
// their JSON forms: with several processes (studies/plan_share.hpp) each computes a slice and the
// outcomes travel as JSON to every process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/memory/ledger.hpp"
#include "studies/plan_phases.hpp"
#include "studies/plan_record.hpp"
#include "studies/sweep.hpp"

namespace moesim {

// A screened candidate: its record, or why composing it failed.
struct Screened {
  std::optional<PlanRecord> record;
  std::string rejected;
  std::vector<std::int64_t> split;  // a balanced-split candidate's layer split
};
nlohmann::json screened_json(const Screened& x);
Screened screened_from_json(const nlohmann::json& j);

// What one replay gives the search; the full point stays with the process that ran it.
struct Replayed {
  bool ok = false, fits = false;
  double step_time_s = 0, tokens_per_s_per_gpu = 0, mfu = 0, headroom_GiB = 0;
  std::string largest_exposed_phase;
  ExposedPhase non_compute;
  std::optional<SweepPoint> point;
};
Replayed replayed(SweepPoint&& point);
nlohmann::json replayed_json(const Replayed& x);
Replayed replayed_from_json(const nlohmann::json& j);

// The headroom of the ledger's worst stage, in GiB.
double worst_headroom_GiB(const MemoryLedger& ledger);

}  // namespace moesim
