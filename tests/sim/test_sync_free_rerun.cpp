// Megatron-Core's sync-free MoE path runs a step twice when a rank is over its budget or its
// paged stash (paged_stash.py PagedStashRunner): when it does, by hand; the second try's time on
// top of the first's; the two tries' traffic; the larger try's memory.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/plan/sync_free.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Matchers::Contains;

namespace {

// Qwen3-30B-A3B (128 experts, top-8) on EP 8 over HybridEP with the sync-free budget.
Scenario qwen3(const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets{"plan.expert_parallel.transport=\"hybridep\""};
  sets.insert(sets.end(), more.begin(), more.end());
  return test::gallery("qwen3-30b-a3b", sets);
}

const std::string kBudget = "plan.expert_parallel.rank_capacity_factor=1.5";
const std::string kStash = "plan.activations.moe_paged_stash=true";
const std::string kZipf = "plan.routing.model=\"zipf\"";

double harmonic(int n) {
  double h = 0;
  for (int i = 1; i <= n; ++i) h += 1.0 / i;
  return h;
}

double bytes_of_kind(const StepResult& r, CollectiveKind kind) {
  const auto& b = r.bytes_per_rank[static_cast<std::size_t>(kind)];
  return b[0] + b[1];
}

}  // namespace

TEST_CASE("The sync-free path reruns a step when a rank is over its budget or its stash", "[unit]") {
  const Scenario uniform = qwen3({kBudget});
  CHECK_FALSE(sync_free_rerun(uniform.plan, uniform.arch).reruns());
  CHECK(sync_free_rerun(qwen3().plan, uniform.arch).why(uniform.plan).empty());
  // Zipf (exponent 1) over 128 experts, 16 a rank: the first rank's experts draw H(16) / H(128)
  // of the rows, 8 x that of the balanced share (each layer is a draw of many rows: within 1%).
  const Scenario zipf = qwen3({kBudget, kZipf});
  const SyncFreeRerun over = sync_free_rerun(zipf.plan, zipf.arch);
  REQUIRE(over.reruns());
  CHECK(over.layer == 0);
  CHECK(over.layer_load == Approx(8 * harmonic(16) / harmonic(128)).epsilon(0.01));
  CHECK(over.stage == -1);
  CHECK_THAT(over.why(zipf.plan), Contains("layer 0") && Contains("over its budget of 1.50x"));
  // A budget above the hot rank's load: no rerun.
  const Scenario roomy = qwen3({"plan.expert_parallel.rank_capacity_factor=6", kZipf});
  CHECK_FALSE(sync_free_rerun(roomy.plan, roomy.arch).reruns());
  // A stash below the balanced rows overflows under even routing on every stage.
  const Scenario small = qwen3({kBudget, kStash, "plan.activations.moe_paged_stash_cuda_factor=0.9"});
  const SyncFreeRerun full = sync_free_rerun(small.plan, small.arch);
  CHECK((full.layer == -1 && full.stage == 0 && full.stage_load == Approx(1.0)));
  CHECK_THAT(full.why(small.plan), Contains("paged stash of 0.90x"));
}

TEST_CASE("A rerun step runs its passes twice and holds the larger try's memory", "[unit]") {
  // Even routing: a stash of 1.1x the balanced rows holds them, one of 0.9x overflows and the
  // step runs again with the same work, the second time without the stash (as the budget alone).
  const Scenario once = qwen3({kBudget, kStash});
  const Scenario twice = qwen3({kBudget, kStash, "plan.activations.moe_paged_stash_cuda_factor=0.9"});
  const StepResult a = simulate(once).result, b = simulate(twice).result;
  const StepResult plain = simulate(qwen3({kBudget})).result;
  CHECK(a.rerun.empty());
  CHECK_THAT(b.rerun, Contains("paged stash"));
  const auto exposed = [](const StepResult& r, PhaseTag p) { return r.exposed_s[static_cast<std::size_t>(p)]; };
  CHECK(exposed(a, PhaseTag::rerun) == 0);
  // The first try is the stashed step without its optimizer's end (plus zeroing the buckets and
  // the flags' all-reduce); the second is the step without the stash.
  CHECK(exposed(b, PhaseTag::rerun) > 0.99 * a.step_time_s);
  CHECK(exposed(b, PhaseTag::rerun) < a.step_time_s);
  CHECK(b.step_time_s == Approx(plain.step_time_s + exposed(b, PhaseTag::rerun)).epsilon(1e-3));
  for (const PhaseTag p : {PhaseTag::backward, PhaseTag::optimizer, PhaseTag::grad_sync})
    CHECK(exposed(b, p) == Approx(exposed(plain, p)).epsilon(1e-6));
  CHECK(exposed(b, PhaseTag::paged_stash) == 0);  // the first try's stash copies are its rerun phase
  // Activation offload copies out and back in both tries.
  const std::string offload = "plan.activations.offload_modules=[\"core_attn\"]";
  const auto reloads = [](const Simulation& sim) {
    std::size_t n = 0;
    for (TaskId id = 0; id < sim.step.graph.size(); ++id)
      n += sim.step.graph.task(id).stream == StreamKind::offload_h2d;
    return n;
  };
  const std::size_t single = reloads(simulate(qwen3({kBudget, kStash, offload})));
  CHECK(single > 0);
  CHECK(reloads(simulate(qwen3({kBudget, kStash, "plan.activations.moe_paged_stash_cuda_factor=0.9", offload}))) ==
        2 * single);
  // Both tries dispatch and reduce-scatter their gradients; the parameters are gathered once
  // (overlap_param_gather, in the first try's forward); the flags add 3 int32 to the all-reduces.
  CHECK(bytes_of_kind(b, CollectiveKind::all_to_all) == Approx(2 * bytes_of_kind(a, CollectiveKind::all_to_all)));
  CHECK(bytes_of_kind(b, CollectiveKind::reduce_scatter) ==
        Approx(2 * bytes_of_kind(a, CollectiveKind::reduce_scatter)));
  CHECK(bytes_of_kind(b, CollectiveKind::all_gather) == bytes_of_kind(a, CollectiveKind::all_gather));
  CHECK(bytes_of_kind(b, CollectiveKind::all_reduce) == bytes_of_kind(a, CollectiveKind::all_reduce) + 12);

  // Memory: the first try's tensors take the budget and the stash whatever the load (the ledger
  // of the same plan under even routing), the synced dropless try's the zipf load; each stage's
  // ledger is the larger. A 6x stash makes the first try larger, a 1.1x one the second.
  for (const std::string stash : {"6", "1.1"}) {
    const std::string factor = "plan.activations.moe_paged_stash_cuda_factor=" + stash;
    const Scenario rerun = qwen3({kBudget, kStash, factor, kZipf});
    const Scenario first = qwen3({kBudget, kStash, factor});
    const Scenario second = qwen3({kZipf});
    const MemoryLedger l = test::run_ledger(rerun).ledger, l1 = test::run_ledger(first).ledger,
                       l2 = test::run_ledger(second).ledger;
    CHECK_THAT(l.rerun, Contains("layer 0"));
    const StageLedger &s = l.stages[0], &s1 = l1.stages[0], &s2 = l2.stages[0];
    CHECK(s.rerun_try == (stash == "1.1"));
    CHECK(s.peak_allocated == (s.rerun_try ? s2.peak_allocated : s1.peak_allocated));
    CHECK(s.peak_allocated == std::max(s1.peak_allocated, s2.peak_allocated));
  }
}

TEST_CASE("A rerun step under a pipeline equals itself with every rank simulated", "[unit]") {
  // EP 2 over two stages, the hot rank at 1.74x: the tries' transfers and collectives match
  // across the simulated ranks as they do with all of them.
  const Scenario sc = qwen3({kBudget, kStash, kZipf, "plan.expert_parallel.degree=2", "plan.pipeline.degree=2"});
  const StepResult some = simulate(sc).result;
  SimOptions all;
  all.all_ranks = true;
  const StepResult every = simulate(sc, all).result;
  CHECK_THAT(some.rerun, Contains("layer 0"));
  CHECK(some.simulated_ranks < every.simulated_ranks);
  CHECK(every.step_time_s == Approx(some.step_time_s).epsilon(1e-12));
}

TEST_CASE("A rerun step is placed for the DDP and ZeRO-2 designs and refused for FSDP", "[unit]") {
  const StepResult zero2 = simulate(qwen3({kBudget, kZipf, "design=\"zero2+ep8\""})).result;
  CHECK_THAT(zero2.rerun, Contains("layer 0"));
  CHECK(zero2.exposed_s[static_cast<std::size_t>(PhaseTag::rerun)] > 0);
  const InputError fsdp =
      test::load_error(test::source_path("scenarios/gallery/qwen3-30b-a3b.json"),
                       {"plan.expert_parallel.transport=\"hybridep\"", kBudget, kZipf, "design=\"fsdp+ep8\""});
  CHECK(fsdp.path() == "plan.expert_parallel.rank_capacity_factor");
  CHECK_THAT(fsdp.message(), Contains("modelled for the DDP and ZeRO-2 designs") && Contains("4.9"));
}
