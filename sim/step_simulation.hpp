// One scenario, simulated: build the step's DAG, replay it, and turn the timeline into the
// numbers users plan with (step time, tokens/s/GPU, MFU, exposed phases, bytes per rank) plus
// the memory ledger fed with the in-flight microbatches the replay measured. Without a replay,
// scenario_ledger() takes them from the pipeline schedule's pass order, which the replay holds
// to (the tests check that both agree).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "models/arch/flops.hpp"
#include "models/input/composed_scenario.hpp"
#include "models/memory/ledger.hpp"
#include "sim/step_bound.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"

namespace moesim {

struct LedgerStructure;

struct StepResult {
  std::string design;
  double params_total = 0;
  double params_active = 0;
  FlopsPerToken flops;
  std::int64_t world = 0;
  std::int64_t microbatches = 0;
  double global_tokens = 0;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;  // useful model FLOPs / (GPUs x step x nominal peak), as a fraction
  // The same FLOPs over the FP8 dense peak, when FP8 linears run and the profile has that peak
  // (0 otherwise): MFU itself stays on the BF16 peak, the report's convention.
  double mfu_fp8_peak = 0;
  std::array<double, kPhases> exposed_s{};             // the critical rank's exclusive split by phase
  std::array<double, kTaskKinds> exposed_by_kind_s{};  // the same split by kind of task
  std::array<double, kTaskKinds> busy_by_kind_s{};     // critical rank: time each kind ran, hidden or not
  double idle_s = 0;                                   // pipeline bubble and waiting on the critical rank
  std::array<double, kPhases> critical_path_s{};
  std::array<std::array<double, kLinkClasses>, kCollectiveKinds> bytes_per_rank{};  // worst simulated rank
  std::array<double, kCollectiveKinds> nvlink_relay_bytes_per_rank{};  // of bytes_per_rank[k][nvlink]: PXN relay
  std::vector<std::vector<std::int64_t>> in_flight;  // per stage and model chunk, measured from the replay
  double dropped_fraction = 0;
  std::vector<LayerRouting> routing;  // per MoE layer under skewed routing, by layer (step_builder.hpp)
  // Why the sync-free MoE path runs the step twice (models/plan/sync_free.hpp; "" when it does not).
  std::string rerun;
  std::size_t tasks = 0;
  std::size_t simulated_ranks = 0;
  MemoryLedger ledger;
};

// MFU (Olmo-core's report): useful model FLOPs a token x tokens/s/GPU over a nominal dense peak.
// A token the capacity cap drops (`dropped_fraction` of them) skips its routed experts, so their
// FLOPs are not useful work (without this, heavy dropping would report an MFU above 100%).
double model_flops_utilization(const FlopsPerToken& flops, double dropped_fraction, double tokens_per_s_per_gpu,
                               double peak_TFLOPs);

struct Simulation {
  BuiltStep step;
  ReplayResult replay;
  StepResult result;
};

// With the scenario's cost models and resource-sharing policy (its `cost_models` choice).
Simulation simulate(const Scenario& scenario, const SimOptions& options = {});
// With another cost book (tests use hand-set ones); the sharing policy is still the scenario's.
Simulation simulate(const Scenario& scenario, const CostBook& costs, const SimOptions& options);
// The same into `sim`, reusing its replay's buffers: a sweep thread or a repeated benchmark runs
// simulation after simulation, and a warm one allocates little.
void simulate(const Scenario& scenario, const SimOptions& options, Simulation& sim);
void simulate(const Scenario& scenario, const CostBook& costs, const SimOptions& options, Simulation& sim);

// The scenario paths only the memory ledger reads: "plan.optimizer.layout", the distributed
// optimizer's shard layout (models/memory/optimizer_layouts.hpp).
const std::vector<std::string>& memory_only_paths();
// Whether `a` and `b` give the same step: their composed documents, cost models and FLOP
// convention agree but at memory_only_paths(). Such twins share one step-time bound and one
// replay; each keeps its own ledger.
bool same_step(const Scenario& a, const Scenario& b);
// The result of `twin` (simulated) for `scenario`, its same_step twin: the twin's timeline with
// this plan's memory ledger, as simulate() would give it (tests/sim/test_memory_twins.cpp).
StepResult restate_memory(const Scenario& scenario, const StepResult& twin);

// The memory ledger alone, with the in-flight counts of the pipeline schedule (`moesim ledger`).
MemoryLedger scenario_ledger(const Scenario& scenario, const Inventory& inventory);
// The same on a ledger structure made for this plan or one that differs from it only at
// structure_free_paths() (models/memory/ledger_structure.hpp): a planner's plans share them.
MemoryLedger scenario_ledger(const Scenario& scenario, const LedgerStructure& structure);

// What a planner knows of a plan before replaying it: its memory ledger (from the schedule's
// in-flight counts, as scenario_ledger) and a lower bound on its step time (sim/step_bound.hpp),
// both with the scenario's cost models.
struct PlanScreen {
  MemoryLedger ledger;
  StepBound bound;
  double params_total = 0;
  FlopsPerToken flops;
};
PlanScreen screen_plan(const Scenario& scenario);
// The same with the architecture's inventory already built (a planner screens thousands of
// plans of one model).
PlanScreen screen_plan(const Scenario& scenario, const Inventory& inventory);
PlanScreen screen_plan(const Scenario& scenario, const Inventory& inventory, const LedgerStructure& structure);
// The layer split that balances the scenario's virtual stages (sim/layer_split.hpp), with its
// cost models.
std::vector<std::int64_t> balanced_split(const Scenario& scenario);

}  // namespace moesim
