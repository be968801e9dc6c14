// What the plan search shares between candidates (twins that differ only in the optimizer layout
// share a bound and a replay, plans that differ only in microbatch or recompute share a ledger
// structure, changes are parsed once per search) changes no record: each candidate composed,
// screened and replayed alone gives the numbers the search recorded for it.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/common/units.hpp"
#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"
#include "studies/plan_search.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("Plan search: every record is its candidate evaluated alone", "[unit][plan]") {
  // Pipelines, both DDP families, every layout (twins) and microbatch x recompute (shared
  // structures), on two threads.
  const ScenarioSource source = read_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"), {});
  PlanRequest q;
  q.gpus = 64;
  q.search = {"design=ddp,ddp-nodistopt", "ep=8",      "pp=4,8", "schedule=1f1b,v2", "microbatch=1,2",
              "recompute=none,full",      "split=even"};
  const PlanSpace space = plan_space(source, compose(source), q);
  PlanSearchOptions options;
  options.jobs = 2;
  const PlanSearchResult result = search_plans(source, space, options);
  REQUIRE(result.records.size() >= 40);
  std::size_t replayed = 0;
  for (const PlanRecord& r : result.records) {
    const PlanCandidate& c = result.candidates[r.candidate];
    INFO("candidate " << r.candidate << ": " << c.values.dump());
    const Scenario s = compose(source, changes_of(candidate_changes(c)));
    const PlanScreen screen = screen_plan(s);  // its own inventory and ledger structure
    const StageLedger& worst = screen.ledger.stages[screen.ledger.worst_stage];
    CHECK(r.peak_reserved_GiB == worst.peak_reserved / kGiB);
    CHECK(r.device_total_GiB == worst.device_total / kGiB);
    CHECK(r.bound_step_s == screen.bound.step_s);
    if (r.status != PlanStatus::replayed) {
      CHECK(r.headroom_GiB == worst.headroom / kGiB);
      CHECK(r.fits == !screen.ledger.oom);
      continue;
    }
    ++replayed;
    const StepResult alone = simulate(s, SimOptions{}).result;
    CHECK(r.step_time_s == alone.step_time_s);
    CHECK(r.tokens_per_s_per_gpu == alone.tokens_per_s_per_gpu);
    const StageLedger& replayed_worst = alone.ledger.stages[alone.ledger.worst_stage];
    CHECK(r.headroom_GiB == replayed_worst.headroom / kGiB);
  }
  CHECK(replayed >= 2);
}
