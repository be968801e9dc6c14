// A plan search composes each candidate from typed values written into its base's plan section
// (studies/plan_space.hpp compose_candidate): the same scenario, or the same refusal at the same
// path, as composing the `--set` changes a report prints for it (candidate_changes).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "models/common/errors.hpp"
#include "models/input/scenario.hpp"
#include "models/plan/design_spec.hpp"
#include "studies/plan_space.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

struct Outcome {
  std::optional<Scenario> scenario;
  std::string refused_at;  // the error's path when it is refused
};

template <class Compose>
Outcome outcome(Compose&& compose) {
  Outcome out;
  try {
    out.scenario = compose();
  } catch (const InputError& e) {
    out.refused_at = e.path().empty() ? "(none)" : e.path();
  }
  return out;
}

// Every candidate of the space on `source` (rules' refusals included: composing may refuse them
// too, and must refuse them alike), composed both ways.
std::size_t check_space(const ScenarioSource& source, const PlanRequest& q) {
  const Scenario base = compose(source);
  const PlanSpace space = plan_space(source, base, q);
  std::size_t composed = 0;
  for (const PlanCandidate& c : enumerate_plans(space, base)) {
    INFO("candidate " << c.index << ": " << c.values.dump());
    const Outcome typed = outcome([&] { return compose_candidate(source, base, c, ResolvedRecord::all_sections); });
    const Outcome by_paths = outcome([&] { return compose(source, changes_of(candidate_changes(c))); });
    REQUIRE(typed.scenario.has_value() == by_paths.scenario.has_value());
    // A rule's refusal (the design entries' planner_refusal among them) is a plan compose refuses
    // too, but for an HSDP shard degree equal to the DP degree: plain FSDP, searched as such.
    if (!c.refusal.empty() && c.refusal.find("not below the DP degree") == std::string::npos)
      CHECK_FALSE(typed.scenario.has_value());
    if (!typed.scenario) {
      CHECK(typed.refused_at == by_paths.refused_at);
      continue;
    }
    ++composed;
    CHECK(typed.scenario->resolved == by_paths.scenario->resolved);
    CHECK(design_name(typed.scenario->plan) == design_name(by_paths.scenario->plan));
    CHECK(typed.scenario->stack.taken.size() == by_paths.scenario->stack.taken.size());
    CHECK(typed.scenario->plan.domain_hosts == by_paths.scenario->plan.domain_hosts);
  }
  return composed;
}

}  // namespace

TEST_CASE("Plan candidates: the typed values compose what their --set changes compose", "[unit][plan]") {
  SECTION("every design family, precision and schedule on an inline plan") {
    const ScenarioSource source =
        read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                      {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144"});
    PlanRequest q;
    q.gpus = 16;
    q.search = {"design=fsdp,hsdp,ddp,ddp-nodistopt,zero2,fsdp1,fsdp-noreshard",
                "etp=1,2",
                "microbatch=1,4",
                "recompute=none,full",
                "schedule=1f1b,v2,zbv",
                "precision=scenario,fp8"};
    CHECK(check_space(source, q) > 100);
  }
  SECTION("a plan from its own file, and a path axis that overrides a named axis") {
    const ScenarioSource source =
        read_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {"plan.batch.global_batch_tokens=262144"});
    PlanRequest q;
    q.gpus = 8;
    q.search = {"design=ddp,fsdp",
                "pp=1,2,4",
                "microbatch=1,2",
                "recompute=none",
                "plan.pipeline.schedule=zb_h1,1f1b",
                "plan.ddp.bucket_cap_MiB=25,100"};
    CHECK(check_space(source, q) > 10);
  }
  SECTION("a stack's plan with Megatron-Core's selective modules and uneven split keys") {
    const ScenarioSource source =
        read_scenario(test::source_path("scenarios/gallery/llama3-70b.json"),
                      {"plan.activations.recompute=\"selective\"", "plan.activations.recompute_modules=[\"core_attn\"]",
                       "plan.pipeline.schedule=\"1f1b\"", "plan.pipeline.virtual_stages=1",
                       "plan.pipeline.first_stage_layers=19", "plan.pipeline.last_stage_layers=19"});
    PlanRequest q;
    q.gpus = 64;
    q.search = {"design=ddp", "tp=4,8", "pp=2,4", "microbatch=1", "recompute=none,selective,full", "schedule=1f1b,v2"};
    CHECK(check_space(source, q) > 4);
  }
}

TEST_CASE("Plan candidates: a balanced split is written as the split key", "[unit][plan]") {
  const ScenarioSource source =
      read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                    {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144"});
  const Scenario base = compose(source);
  PlanRequest q;
  q.gpus = 8;
  q.search = {"design=ddp", "pp=2", "microbatch=1", "recompute=none", "schedule=1f1b", "split=balanced"};
  std::vector<PlanCandidate> all = enumerate_plans(plan_space(source, base, q), base);
  REQUIRE_FALSE(all.empty());
  PlanCandidate c = all.front();
  REQUIRE(c.balanced_split);
  const std::int64_t layers = base.arch.num_layers;
  set_layer_split(c, {layers / 2 + 1, layers - layers / 2 - 1});
  const Scenario typed = compose_candidate(source, base, c, ResolvedRecord::all_sections);
  const Scenario by_paths = compose(source, changes_of(candidate_changes(c)));
  CHECK(typed.plan.pp_layer_split == std::vector<std::int64_t>{layers / 2 + 1, layers - layers / 2 - 1});
  CHECK(typed.resolved == by_paths.resolved);
}
