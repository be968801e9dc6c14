#include "sim/step_simulation.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "models/common/errors.hpp"
#include "models/common/units.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/ledger_structure.hpp"
#include "models/plan/design_spec.hpp"
#include "sim/layer_split.hpp"
#include "sim/resource_sharing.hpp"

namespace moesim {

namespace {

// The architecture's inventory, kept per thread for the next simulation of the same model: a
// sweep's consecutive points mostly differ in the plan, and a planner's all do.
const Inventory& inventory_of(const Architecture& arch) {
  thread_local std::optional<std::pair<Architecture, Inventory>> last;
  if (!last || !(last->first == arch)) last.emplace(arch, build_inventory(arch));
  return last->second;
}

// The in-flight counts a replay measured, with the plan's allocation order for the ledger.
InFlight replayed_in_flight(const Scenario& sc, std::vector<std::vector<std::int64_t>> chunks) {
  return {std::move(chunks),
          sc.plan.splits_backward() ? "the replay: from each pass's first compute kernel to its W pass's last"
                                    : "the replay: from each pass's first compute kernel to its backward's last",
          allocation_replay(stage_pass_orders(sc.plan, batch_shape(sc.plan, sc.arch).microbatches))};
}

// Whether documents `a` and `b` agree once the keys at `paths` (dot-separated, relative to them)
// are left out of both; read in place, without a copy (a plan search asks it of every twin).
bool agree_except(const nlohmann::json& a, const nlohmann::json& b, const std::vector<std::string_view>& paths) {
  if (paths.empty() || !a.is_object() || !b.is_object()) return a == b;
  // Whether `key` is a path left out whole here, and the paths that go on below it.
  const auto below = [&paths](const std::string& key) {
    bool whole = false;
    std::vector<std::string_view> rest;
    for (const std::string_view p : paths) {
      const std::size_t dot = p.find('.');
      if (p.substr(0, dot) != key) continue;
      if (dot == std::string_view::npos)
        whole = true;
      else
        rest.push_back(p.substr(dot + 1));
    }
    return std::pair{whole, rest};
  };
  for (auto it = a.begin(); it != a.end(); ++it) {
    const auto [whole, rest] = below(it.key());
    if (whole) continue;
    const auto jt = b.find(it.key());
    if (jt == b.end() || !agree_except(*it, *jt, rest)) return false;
  }
  for (auto jt = b.begin(); jt != b.end(); ++jt) {
    if (!a.contains(jt.key()) && !below(jt.key()).first) return false;
  }
  return true;
}

}  // namespace

double model_flops_utilization(const FlopsPerToken& flops, double dropped_fraction, double tokens_per_s_per_gpu,
                               double peak_TFLOPs) {
  const double useful_per_token = flops.total - flops.routed_experts * dropped_fraction;
  return useful_per_token * tokens_per_s_per_gpu / (peak_TFLOPs * 1e12);
}

Simulation simulate(const Scenario& sc, const SimOptions& options) {
  Simulation sim;
  simulate(sc, options, sim);
  return sim;
}

void simulate(const Scenario& sc, const SimOptions& options, Simulation& sim) {
  const ProfileCostBook costs(sc.hardware, sc.cost_models);
  simulate(sc, costs, options, sim);
}

MemoryLedger scenario_ledger(const Scenario& sc, const Inventory& inv) {
  return scenario_ledger(sc, ledger_structure(sc.arch, inv, sc.plan));
}

MemoryLedger scenario_ledger(const Scenario& sc, const LedgerStructure& structure) {
  return build_ledger(sc.arch, sc.plan, sc.hardware,
                      schedule_in_flight(sc.plan, batch_shape(sc.plan, sc.arch).microbatches), structure);
}

PlanScreen screen_plan(const Scenario& sc) { return screen_plan(sc, build_inventory(sc.arch)); }

PlanScreen screen_plan(const Scenario& sc, const Inventory& inv) {
  return screen_plan(sc, inv, ledger_structure(sc.arch, inv, sc.plan));
}

PlanScreen screen_plan(const Scenario& sc, const Inventory& inv, const LedgerStructure& structure) {
  const ProfileCostBook costs(sc.hardware, sc.cost_models);
  PlanScreen out;
  out.ledger = scenario_ledger(sc, structure);
  std::vector<const std::vector<LocalTensor>*> stages;
  for (const StageStructure& s : structure.stages) stages.push_back(&s.tensors);
  out.bound = step_time_lower_bound(sc.arch, stages, sc.plan, costs);
  out.params_total = inv.params_total;
  out.flops = flop_conventions().get(sc.flop_convention).per_token(sc.arch, inv);
  return out;
}

std::vector<std::int64_t> balanced_split(const Scenario& sc) {
  const ProfileCostBook costs(sc.hardware, sc.cost_models);
  return balanced_layer_split(sc.arch, sc.plan, costs);
}

Simulation simulate(const Scenario& sc, const CostBook& costs, const SimOptions& options) {
  Simulation sim;
  simulate(sc, costs, options, sim);
  return sim;
}

void simulate(const Scenario& sc, const CostBook& costs, const SimOptions& options, Simulation& sim) {
  sim.result = StepResult{};
  const Inventory& inv = inventory_of(sc.arch);
  sim.step = build_step(sc.arch, inv, sc.plan, costs, options, std::move(sim.step));
  std::unique_ptr<ResourceSharing> sharing;
  try {
    sharing = resource_sharing_models().get(sc.cost_models.resource_sharing).make(sc.hardware);
  } catch (const UnknownNameError& e) {
    throw InputError(sc.file, "cost_models.resource_sharing", e.what());
  }
  replay(sim.step.graph, *sharing, sim.replay);
  const TimelineMetrics tm = measure(sim.step.graph, sim.replay, SplitRanks::critical);  // the one reported

  StepResult& r = sim.result;
  r.design = design_name(sc.plan);
  r.params_total = inv.params_total;
  r.params_active = inv.params_active;
  r.flops = flop_conventions().get(sc.flop_convention).per_token(sc.arch, inv);
  r.world = sc.plan.world();
  r.microbatches = sim.step.microbatches;
  r.global_tokens = static_cast<double>(sc.plan.global_batch_tokens);
  r.step_time_s = tm.step_time;
  r.tokens_per_s_per_gpu = r.global_tokens / r.step_time_s / static_cast<double>(r.world);
  r.dropped_fraction = sim.step.dropped_fraction;
  r.routing = sim.step.routing;
  r.rerun = sim.step.rerun;
  std::sort(r.routing.begin(), r.routing.end(), [](const auto& a, const auto& b) { return a.layer < b.layer; });
  r.mfu = model_flops_utilization(r.flops, r.dropped_fraction, r.tokens_per_s_per_gpu,
                                  sc.hardware.gpu.peak_bf16_TFLOPs.value);
  if (sc.plan.precision.any_low_precision() && sc.hardware.gpu.peak_fp8_dense_TFLOPs) {
    r.mfu_fp8_peak = model_flops_utilization(r.flops, r.dropped_fraction, r.tokens_per_s_per_gpu,
                                             sc.hardware.gpu.peak_fp8_dense_TFLOPs->value);
  }
  const RankTimeline& crit = tm.ranks[tm.critical_rank];
  r.exposed_s = crit.exposed;
  r.exposed_by_kind_s = crit.exposed_by_kind;
  r.busy_by_kind_s = crit.busy_by_kind;
  r.idle_s = crit.idle;
  r.critical_path_s = tm.critical_path;
  for (const auto& rt : tm.ranks) {
    for (std::size_t k = 0; k < kCollectiveKinds; ++k) {
      for (std::size_t l = 0; l < kLinkClasses; ++l)
        r.bytes_per_rank[k][l] = std::max(r.bytes_per_rank[k][l], rt.bytes[k][l]);
      r.nvlink_relay_bytes_per_rank[k] = std::max(r.nvlink_relay_bytes_per_rank[k], rt.nvlink_relay_bytes[k]);
    }
  }
  r.in_flight = measured_chunks_in_flight(sim.step, sim.replay, sc.plan.pp, sc.plan.model_chunks());
  r.tasks = sim.step.graph.size();
  r.simulated_ranks = sim.step.ranks.size();
  r.ledger = build_ledger(sc.arch, inv, sc.plan, sc.hardware, replayed_in_flight(sc, r.in_flight));
}

const std::vector<std::string>& memory_only_paths() {
  static const std::vector<std::string> paths = {"plan.optimizer.layout"};
  return paths;
}

bool same_step(const Scenario& a, const Scenario& b) {
  const auto models = [](const CostModelChoice& c) {
    return std::tie(c.gemm, c.grouped_gemm, c.attention, c.memory, c.collective, c.resource_sharing);
  };
  if (models(a.cost_models) != models(b.cost_models) || a.flop_convention != b.flop_convention) return false;
  const std::vector<std::string_view> paths(memory_only_paths().begin(), memory_only_paths().end());
  return agree_except(a.resolved, b.resolved, paths);
}

StepResult restate_memory(const Scenario& sc, const StepResult& twin) {
  StepResult r = twin;
  r.design = design_name(sc.plan);
  r.ledger = build_ledger(sc.arch, inventory_of(sc.arch), sc.plan, sc.hardware, replayed_in_flight(sc, r.in_flight));
  return r;
}

}  // namespace moesim
