// The space `moesim plan` searches: the axes of a parallel plan (design family, HSDP shard
// degree, TP degree, CP degree, EP-MP degree, expert-TP degree, PP degree, schedule and layer split, rank microbatch,
// recompute, optimizer layout, plus any scenario path the user adds), their default values for a GPU count, the user's
// restrictions (--search AXIS=V1,V2,...), and the candidates they enumerate. An axis that does
// not apply to a candidate (the schedule without PP, the layout without a distributed
// optimizer, the shard degree outside HSDP, EP under FSDP, which is not modelled) collapses to one
// value; a combination that breaks a rule (a degree that does not divide, a batch that does not
// split) is refused with its reason before anything is composed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/input/scenario.hpp"
#include "models/plan/plan_keys.hpp"

namespace moesim {

// Candidates a search enumerates at most unless the request raises it. Measured: enumerating
// 100,000 DeepSeek-V3 candidates on 1024 GPUs (`plan scenarios/deepseek-v3-ddp-ep8-pp16.json
// --gpus 1024 --search plan.optimizer.min_shard_numel=1,2,3,4,5,6`) took 0.25 s and 212 MB peak
// (about 2 KB a candidate) before the refusal; screening runs at 2,700-3,400 candidates/s on two
// cores (docs/performance.md), so 100,000 screened is about half a minute.
inline constexpr std::size_t kDefaultMaxPlanCandidates = 100000;

struct PlanRequest {
  std::int64_t gpus = 0;
  std::int64_t gpus_per_node = 0;        // 0: the scenario's (or all GPUs when fewer)
  std::int64_t global_batch_tokens = 0;  // 0: the scenario's
  std::vector<std::string> search;       // AXIS=V1,V2,... restrictions and extra path axes
  std::size_t max_candidates = kDefaultMaxPlanCandidates;
};

struct PlanAxis {
  std::string name;  // a named axis (plan_axis_names) or a scenario path
  std::vector<nlohmann::json> values;
};

struct PlanSpace {
  std::int64_t gpus = 0;
  std::int64_t gpus_per_node = 0;
  std::int64_t global_batch_tokens = 0;
  std::vector<PlanAxis> axes;  // the named axes first, in plan_axis_names order, then path axes
  std::size_t max_candidates = kDefaultMaxPlanCandidates;  // enumerate_plans refuses a larger space
};

// design (fsdp, hsdp, ddp, ddp-nodistopt), hsdp, tp, cp, ep, etp, pp, schedule (1f1b, vN, 1f1b_v, zb_h1, zbv),
// microbatch, recompute, layout, split (even, balanced), precision (scenario, bf16, fp8, mxfp8).
const std::vector<std::string>& plan_axis_names();

// A schedule axis value's virtual stages: 1 for "1f1b" and "zb_h1", N for "vN" (N >= 2), 2 for
// the V-shape "1f1b_v" and "zbv"; 0 for anything else.
std::int64_t plan_schedule_virtual_stages(const std::string& schedule);
// Its plan.pipeline.schedule: "interleaved_1f1b" for "vN", the value itself for the others.
std::string plan_schedule_key(const std::string& schedule);

// The source a search for `request` starts from. With --gpus-per-node G the scenario's own world
// is regrouped into hosts of gcd(world, G) GPUs (its plan then composes on a profile of smaller
// hosts, an NVL72 rack's 4-GPU trays); every candidate sets its nodes and host size itself.
ScenarioSource plan_source(ScenarioSource source, const PlanRequest& request);

// The space for `request` on `base` (the composed scenario). Throws InputError naming --gpus,
// --gpus-per-node, --global-batch or the --search expression at fault.
PlanSpace plan_space(const ScenarioSource& source, const Scenario& base, const PlanRequest& request);

struct PlanCandidate {
  std::size_t index = 0;
  std::string family;           // the design axis value
  nlohmann::json values;        // axis -> value, the axes that apply
  std::vector<PlanSet> sets;    // typed values written into the plan section, in order
  PointOverrides paths;         // the user's scenario-path axes: composed first, as a sweep point's
  std::string refusal;          // why a rule refuses it (empty: it passed)
  bool balanced_split = false;  // its layer split is chosen when it is screened (sim/layer_split.hpp)
};

// Every candidate of the space, in a fixed order (the axes' product, outermost first). Throws
// InputError naming --max-candidates when there are more than space.max_candidates.
std::vector<PlanCandidate> enumerate_plans(const PlanSpace& space, const Scenario& base);

// The candidate composed: `base` (the search's scenario composed from `source`) with the
// candidate's values written into its plan section, which alone is parsed again; a candidate with
// path axes is composed from `source` with its values written first and its paths applied after
// them, as changes are (a path axis overrides a named axis; `record` says what its resolved
// document keeps). Throws InputError as compose does.
Scenario compose_candidate(const ScenarioSource& source, const Scenario& base, const PlanCandidate& candidate,
                           ResolvedRecord record);

// The `--set` changes that make the candidate from the search's scenario (its sets, then its
// paths): what a report prints to reproduce it, and what composing them gives (tested).
PointOverrides candidate_changes(const PlanCandidate& candidate);

// The candidate's sets with the layer split set to `split`.
void set_layer_split(PlanCandidate& candidate, const std::vector<std::int64_t>& split);

}  // namespace moesim
