// Valid but extreme plans simulate with finite, sane numbers (the fuzz oracle,
// fuzz::step_output_problem) or are refused with a reason. The README's reliability table lists
// the same plans.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fuzz/entries.hpp"
#include "models/common/errors.hpp"
#include "models/input/scenario.hpp"
#include "sim/step_simulation.hpp"
#include "sim/task_graph.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// The Figure 8 DDP+EP8 point (N=48, top-4, 8 layers, 8 x B300) with `sets` applied.
StepResult simulate_extreme(const std::vector<std::string>& sets) {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets);
  StepResult r = simulate(s, SimOptions{}).result;
  INFO("design " << r.design << ", step " << r.step_time_s << " s, MFU " << r.mfu);
  CHECK(fuzz::step_output_problem(r).empty());
  return r;
}

double bytes_sent(const StepResult& r, CollectiveKind kind) {
  const auto& by_link = r.bytes_per_rank[static_cast<std::size_t>(kind)];
  return by_link[0] + by_link[1];
}

std::string batch(std::int64_t tokens) { return "plan.batch.global_batch_tokens=" + std::to_string(tokens); }

}  // namespace

TEST_CASE("Extreme plan: one GPU (DDP and FSDP) simulates, the 18.7B model does not fit it", "[unit][extreme]") {
  for (const char* design : {"ddp", "fsdp"}) {
    const StepResult r = simulate_extreme(
        {std::string("design=") + design, "plan.gpus_per_node=1", "plan.expert_parallel.degree=1", batch(2 * 16384)});
    CHECK(r.world == 1);
    CHECK(r.microbatches == 2);
    CHECK(r.ledger.oom);
    CHECK(bytes_sent(r, CollectiveKind::all_reduce) == 0);  // nobody to reduce with
  }
}

TEST_CASE("Extreme plan: 100,000 GPUs (12,500 nodes) simulate with symmetric replay", "[unit][extreme]") {
  for (const char* design : {"ddp+ep8", "fsdp", "ddp+ep8+pp4"}) {
    const std::int64_t pp = std::string(design) == "ddp+ep8+pp4" ? 4 : 1;
    const std::int64_t dp = 100000 / pp;
    const StepResult r =
        simulate_extreme({std::string("design=") + design, "plan.nodes=12500", batch(16384 * dp * (pp > 1 ? 4 : 1))});
    CHECK(r.world == 100000);
    CHECK(r.simulated_ranks <= 8);
  }
}

TEST_CASE("Extreme plan: one layer, MoE or dense", "[unit][extreme]") {
  const StepResult moe =
      simulate_extreme({"architecture.num_layers=1", "architecture.dense_layers=[]", batch(16384 * 8 * 2)});
  CHECK(bytes_sent(moe, CollectiveKind::all_to_all) > 0);  // the one MoE layer still dispatches over EP
  simulate_extreme({"architecture.num_layers=1", "architecture.dense_layers=[0]", "plan.expert_parallel.degree=1",
                    batch(16384 * 8 * 2)});
}

TEST_CASE("Extreme plan: 1,024 experts, on EP8 and on EP1024 over 128 nodes", "[unit][extreme]") {
  simulate_extreme({"architecture.moe.num_experts=1024", batch(16384 * 8 * 2)});
  const StepResult wide = simulate_extreme(
      {"architecture.moe.num_experts=1024", "plan.nodes=128", "plan.expert_parallel.degree=1024", batch(16384 * 1024)});
  CHECK(wide.world == 1024);
}

TEST_CASE("Extreme plan: top-K = N (every token to every expert)", "[unit][extreme]") {
  const StepResult r =
      simulate_extreme({"architecture.moe.num_experts=8", "architecture.moe.top_k=8", batch(16384 * 8 * 2)});
  CHECK(r.dropped_fraction == 0);
  // K > N is refused with the allowed range.
  CHECK_THROWS_AS(load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                {"architecture.moe.num_experts=8", "architecture.moe.top_k=9"}),
                  InputError);
}

TEST_CASE("Extreme plan: a global batch of one token per rank", "[unit][extreme]") {
  for (const char* design : {"ddp+ep8", "fsdp"}) {
    const StepResult r = simulate_extreme({std::string("design=") + design, "architecture.sequence_length=1",
                                           "plan.batch.rank_microbatch_sequences=1", batch(8)});
    CHECK(r.global_tokens == 8);
    CHECK(r.mfu < 0.01);  // a step of 8 tokens is all latency
  }
  // One token in all on one GPU.
  const StepResult one =
      simulate_extreme({"plan.gpus_per_node=1", "plan.expert_parallel.degree=1", "architecture.sequence_length=1",
                        "plan.batch.rank_microbatch_sequences=1", batch(1)});
  CHECK(one.global_tokens == 1);
}

TEST_CASE("Extreme plan: capacity factor below 1 drops tokens, and the drops are reported", "[unit][extreme]") {
  for (const char* cf : {"0.5", "0.01"}) {
    const StepResult r = simulate_extreme({"plan.routing.model=zipf", "plan.routing.capacity_factor=" + std::string(cf),
                                           "plan.routing.dropless=false", batch(16384 * 8 * 2)});
    CHECK(r.dropped_fraction > 0);
    CHECK(r.dropped_fraction < 1);
  }
}

TEST_CASE("Extreme plan: a pipeline stage per layer, and interleaving one layer per chunk", "[unit][extreme]") {
  simulate_extreme({"plan.pipeline.degree=8", "plan.expert_parallel.degree=1", "plan.nodes=1", batch(16384 * 8)});
  simulate_extreme({"plan.pipeline.degree=2", "plan.pipeline.schedule=interleaved_1f1b",
                    "plan.pipeline.virtual_stages=4", "plan.expert_parallel.degree=4", batch(16384 * 4 * 4)});
  // Interleaving on a single stage has nothing to interleave with: refused (a fuzz finding).
  CHECK_THROWS_WITH(load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                  {"plan.pipeline.schedule=interleaved_1f1b", "plan.pipeline.virtual_stages=2"}),
                    Catch::Contains("need pipeline.degree >= 2"));
}
