// FSDP1 FULL_SHARD (sim/schedules/fsdp1_full_shard.cpp, models/plan/designs/fsdp1_full_shard.cpp):
// flat parameters gathered and reduce-scattered without FSDP2's copies, the gradient divided
// around the reduce-scatter, the backward prefetch's placement, Composer's choice of it, and the
// refusals of what it does not model.
#include <catch2/catch.hpp>

#include <string>

#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario fig8(const std::string& design, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> sets = {"design=" + design, "architecture.moe.num_experts=32"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"), sets);
}

std::size_t labelled(const Simulation& sim, const std::string& label) {
  std::size_t n = 0;
  for (const Task& t : sim.step.graph.tasks()) n += label == t.label ? 1 : 0;
  return n;
}

double bytes(const StepResult& r, CollectiveKind kind) {
  const auto& b = r.bytes_per_rank[static_cast<std::size_t>(kind)];
  return b[0] + b[1];
}

}  // namespace

TEST_CASE("FSDP1 gathers flat parameters without FSDP2's copies and divides gradients around the reduce-scatter",
          "[unit][fsdp1]") {
  const Scenario s1 = fig8("fsdp+fsdp1"), s2 = fig8("fsdp");
  REQUIRE(s1.plan.shard_group() == 8);  // 8 x B300: predivide 4, postdivide 2 (torch's factor rule)
  const Simulation one = simulate(s1), two = simulate(s2);
  CHECK(labelled(one, "all-gather copy-out") == 0);
  CHECK(labelled(one, "all-gather copy-in") == 0);
  CHECK(labelled(one, "reduce-scatter copy-in") == 0);
  CHECK(labelled(two, "all-gather copy-out") > 0);
  // One pre-divide and one post-divide per reduce-scatter; the BF16 shard cast before each gather.
  const std::size_t reduce_scatters = labelled(one, "gradient pre-divide");
  CHECK(reduce_scatters > 0);
  CHECK(labelled(one, "gradient post-divide") == reduce_scatters);
  CHECK(labelled(one, "mixed-precision shard cast") == labelled(one, "wait for the all-gather"));
  // The same collectives' bytes: the blocks gathered twice, the root (embedding and head) once.
  CHECK(bytes(one.result, CollectiveKind::reduce_scatter) == Approx(bytes(two.result, CollectiveKind::reduce_scatter)));
  CHECK(bytes(one.result, CollectiveKind::all_gather) == Approx(bytes(two.result, CollectiveKind::all_gather)));
  // No FSDP memory kernel on the compute stream: its gathers and reductions run beside it.
  for (const Task& t : one.step.graph.tasks()) {
    if (t.stream == StreamKind::compute && t.kind == TaskKind::memory)
      CHECK((t.phase != PhaseTag::fsdp_gather && t.phase != PhaseTag::fsdp_reduce));
  }
  // So their memory traffic is hidden where FSDP2's copy-out and reduce-scatter copy-in hold the
  // compute stream (FP32 reduction here: FSDP1's pre-divide moves as many bytes, beside it).
  const auto memory = static_cast<std::size_t>(TaskKind::memory);
  CHECK(one.result.exposed_by_kind_s[memory] < 0.5 * two.result.exposed_by_kind_s[memory]);
  CHECK(one.result.design == "fsdp+fsdp1");
}

TEST_CASE("FSDP1 without backward prefetch gathers each unit behind the previous reduce-scatter", "[unit][fsdp1]") {
  const StepResult post = simulate(fig8("fsdp+fsdp1", {"plan.fsdp.backward_prefetch=\"backward_post\""})).result;
  const StepResult pre = simulate(fig8("fsdp+fsdp1")).result;
  const StepResult none = simulate(fig8("fsdp+fsdp1", {"plan.fsdp.backward_prefetch=\"none\""})).result;
  // PRE and POST give the communicator the same order.
  CHECK(post.step_time_s == pre.step_time_s);
  const auto gather = static_cast<std::size_t>(PhaseTag::fsdp_gather);
  CHECK(none.exposed_s[gather] > post.exposed_s[gather]);
  CHECK(none.step_time_s > post.step_time_s);
}

TEST_CASE("Composer's stack runs FSDP plans on FSDP1, and a plan's own implementation wins", "[unit][fsdp1][stacks]") {
  const Scenario composer = fig8("fsdp", {"plan.stack=\"composer\""});
  CHECK(composer.plan.fsdp_implementation == FsdpImplementation::fsdp1);
  const Scenario own =
      fig8("fsdp", {"plan.stack=\"composer\"", "plan.fsdp={\"implementation\": \"fsdp2\", \"shard_degree\": 0}"});
  CHECK(own.plan.fsdp_implementation == FsdpImplementation::fsdp2);
}

TEST_CASE("FSDP1's options are refused under FSDP2, and what FSDP1 runs that is not modelled is refused by path",
          "[unit][fsdp1]") {
  CHECK_THROWS_WITH(fig8("fsdp", {"plan.fsdp.limit_all_gathers=true"}),
                    Catch::Contains("plan.fsdp.limit_all_gathers") && Catch::Contains("an FSDP1 option"));
  CHECK_THROWS_WITH(fig8("fsdp", {"plan.fsdp.backward_prefetch=\"none\""}),
                    Catch::Contains("plan.fsdp.backward_prefetch"));
  CHECK_THROWS_WITH(fig8("fsdp+fsdp1", {"plan.fsdp.limit_all_gathers=false"}),
                    Catch::Contains("rate limiter is not modelled"));
  CHECK_THROWS_WITH(fig8("fsdp+fsdp1", {"plan.fsdp.prefetch_depth=2"}), Catch::Contains("FSDP2's option"));
  CHECK_THROWS_WITH(fig8("fsdp+fsdp1+ep8"), Catch::Contains("expert_parallel.degree"));
  CHECK_THROWS_WITH(fig8("fsdp+noreshard+fsdp1"), Catch::Contains("fsdp.reshard_after_forward"));
  CHECK_NOTHROW(fig8("fsdp+hsdp4+fsdp1"));
}

TEST_CASE("FSDP1's backward prefetch puts the next gather between two reduce-scatters on the communicator",
          "[unit][fsdp1]") {
  // The communicator's issue order in the last microbatch's backward (the comm_dp stream of rank
  // 0, in insertion order): with prefetch, unit k - 1's gather comes right before unit k's
  // reduce-scatter; without, right after it.
  const auto order = [](const Simulation& sim) {
    std::vector<std::pair<PhaseTag, std::int32_t>> out;
    std::int32_t last = -1;
    for (const Task& t : sim.step.graph.tasks()) last = std::max(last, t.microbatch);
    for (const Task& t : sim.step.graph.tasks()) {
      const bool backward_gather = t.phase == PhaseTag::fsdp_gather && t.kind == TaskKind::collective;
      if (t.rank == 0 && t.stream == StreamKind::comm_dp && t.microbatch == last &&
          (backward_gather || t.phase == PhaseTag::fsdp_reduce))
        out.emplace_back(t.phase, t.layer);
    }
    return out;
  };
  const auto gather_of = [](const auto& seq, std::int32_t unit, bool after_forward) {
    // The backward gather of `unit`: its second gather in the microbatch (the first is forward's).
    std::size_t seen = 0;
    for (std::size_t i = 0; i < seq.size(); ++i)
      if (seq[i].first == PhaseTag::fsdp_gather && seq[i].second == unit && ++seen == (after_forward ? 2u : 1u))
        return i;
    return seq.size();
  };
  const auto reduce_of = [](const auto& seq, std::int32_t unit) {
    for (std::size_t i = 0; i < seq.size(); ++i)
      if (seq[i].first == PhaseTag::fsdp_reduce && seq[i].second == unit) return i;
    return seq.size();
  };
  const auto post = order(simulate(fig8("fsdp+fsdp1", {"plan.fsdp.backward_prefetch=\"backward_post\""})));
  const auto none = order(simulate(fig8("fsdp+fsdp1", {"plan.fsdp.backward_prefetch=\"none\""})));
  for (const std::int32_t k : {2, 7}) {  // of the 8 blocks
    CAPTURE(k);
    REQUIRE(reduce_of(post, k) < post.size());
    CHECK(gather_of(post, k - 1, true) + 1 == reduce_of(post, k));
    CHECK(reduce_of(none, k) + 1 == gather_of(none, k - 1, true));
  }
}
