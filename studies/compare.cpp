#include "studies/compare.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "models/arch/inventory.hpp"
#include "models/memory/ledger.hpp"
#include "models/plan/designs/design.hpp"

namespace moesim {

namespace {

constexpr std::int64_t kMaxMicrobatches = 4096;  // search bound for the batch crossover
constexpr std::int64_t kMaxExperts = 65536;      // search bound for the expert wall (parser limit)

std::optional<StepResult> try_simulate(const ScenarioSource& source, const std::string& design,
                                       const PointOverrides& extra) {
  PointOverrides point{{"design", design}};
  point.insert(point.end(), extra.begin(), extra.end());
  return run_point(source, point, 0).result;
}

// The memory verdict alone (the ledger), for the expert-count search.
std::optional<bool> fits(const ScenarioSource& source, const std::string& design, std::int64_t experts) {
  try {
    const Scenario s = compose(source, changes_of({{"design", design}, {"architecture.moe.num_experts", experts}}));
    const Inventory inv = build_inventory(s.arch);
    return !scenario_ledger(s, inv).oom;
  } catch (const InputError& e) {
    if (e.infeasible()) return std::nullopt;
    throw;
  }
}

BatchCrossover batch_crossover(const ScenarioSource& source, const std::string& ddp, const std::string& fsdp,
                               const Scenario& base) {
  BatchCrossover c{ddp, fsdp, std::nullopt, {}, ""};
  // Both designs need a whole number of microbatches: step in units of one microbatch on every
  // DP rank of the design with the larger DP degree; doubling from one microbatch.
  const std::int64_t unit = batch_shape(base.plan, base.arch).microbatch_tokens * base.plan.world();
  for (std::int64_t m = 1; m <= kMaxMicrobatches; m *= 2) {
    const PointOverrides batch{{"plan.batch.global_batch_tokens", unit * m}};
    const auto a = try_simulate(source, ddp, batch);
    const auto b = try_simulate(source, fsdp, batch);
    if (!a || !b) continue;
    c.probes.push_back({unit * m, {a->mfu, b->mfu}});
    if (a->mfu >= b->mfu) {
      c.global_batch_tokens = unit * m;
      return c;
    }
  }
  c.note = "DDP did not reach FSDP's MFU up to " + std::to_string(kMaxMicrobatches) + " microbatches per rank";
  return c;
}

ExpertWall expert_wall(const ScenarioSource& source, const std::string& design, const Scenario& base) {
  ExpertWall w{design, std::nullopt, std::nullopt, ""};
  if (!base.arch.moe) {
    w.note = "dense model";
    return w;
  }
  // Candidates are multiples of the EP degree no smaller than top-K: double until the first
  // OOM, then bisect between the last fit and it.
  const Scenario probe = compose(source, changes_of({{"design", design}}));
  const std::int64_t step = std::max<std::int64_t>(1, probe.plan.ep);
  std::int64_t lo = 0, hi = 0;
  for (std::int64_t n = ((base.arch.moe->top_k + step - 1) / step) * step; n <= kMaxExperts; n *= 2) {
    const auto ok = fits(source, design, n);
    if (!ok) continue;
    if (*ok)
      lo = n;
    else {
      hi = n;
      break;
    }
  }
  if (hi == 0) {
    if (lo) w.largest_fitting_experts = lo;
    w.note = lo ? "fits up to the search bound" : "no valid expert count";
    return w;
  }
  while (hi - lo > step && lo > 0) {
    const std::int64_t mid = lo + ((hi - lo) / 2 / step) * step;
    if (mid == lo) break;
    const auto ok = fits(source, design, mid);
    if (ok && *ok)
      lo = mid;
    else
      hi = mid;
  }
  if (lo)
    w.largest_fitting_experts = lo;
  else
    w.note = "out of memory at the smallest expert count";
  w.first_oom_experts = hi;
  return w;
}

}  // namespace

CompareResult compare_designs(const ScenarioSource& source, const std::vector<std::string>& designs, int jobs,
                              const SweepSpec& axes) {
  CompareResult r;
  r.designs = designs;
  // Malformed design names fail before anything runs. Whether each design syncs every microbatch
  // is its entry's answer for its composed plan; where that plan is infeasible at the scenario's
  // batch (the crossover search tries others), its word's first entry answers without a pipeline.
  std::map<std::string, bool> every_microbatch;
  for (const auto& d : designs) {
    try {
      const Scenario s = compose(source, changes_of(PointOverrides{{"design", d}}));
      every_microbatch[d] = design_of(s.plan).syncs_every_microbatch(s.plan);
    } catch (const InputError& e) {
      if (!e.infeasible()) throw;
      every_microbatch[d] = first_design_of(d.substr(0, d.find('+'))).syncs_every_microbatch(ParallelPlan{});
    }
  }
  // The design axis first, so each design's points sit together; then the other axes.
  r.spec.axes.push_back({"design", {}});
  for (const auto& d : designs) r.spec.axes.back().values.emplace_back(d);
  for (const auto& a : axes.axes)
    if (a.path != "design") r.spec.axes.push_back(a);
  r.spec.include = axes.include;
  const PointList points = expand_points(source, r.spec);
  r.points = run_points(source, points, 0, points.size(), jobs, {});
  const Scenario base = compose(source);
  // The designs that reduce once per step against those that sync every microbatch: where does
  // the first reach the second's MFU as the batch grows?
  for (const auto& d : designs) {
    if (every_microbatch[d]) continue;
    for (const auto& f : designs) {
      if (every_microbatch[f]) r.crossovers.push_back(batch_crossover(source, d, f, base));
    }
  }
  for (const auto& d : designs) r.walls.push_back(expert_wall(source, d, base));
  return r;
}

}  // namespace moesim
