// A whole small step worked out by hand: Olmo-core DDP on 2 ranks, 2 dense layers, m = 2, with
// round-number costs (every GEMM 1 ms, every collective 3 ms, memory-bound kernels free).
#include <catch2/catch.hpp>

#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
Scenario tiny_ddp(double bucket_cap_mib) {
  test::TempDir dir;
  nlohmann::json doc = {{"architecture",
                         {{"num_layers", 2},
                          {"d_model", 64},
                          {"vocab_size", 128},
                          {"sequence_length", 16},
                          {"attention", {{"num_heads", 4}, {"num_kv_heads", 4}, {"head_dim", 16}}},
                          {"dense_hidden", 128}}},
                        {"plan",
                         {{"design", "ddp"},
                          {"nodes", 1},
                          {"gpus_per_node", 2},
                          {"ddp", {{"distributed_optimizer", true}, {"bucket_cap_MiB", bucket_cap_mib}}},
                          {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 64}}}}},
                        {"hardware", read_json_file(test::source_path("hardware_profiles/b300-hgx.json"))}};
  return load_scenario(dir.write("tiny.json", doc.dump()), {});
}

ReplayResult run(const Scenario& s, BuiltStep& step) {
  const Inventory inv = build_inventory(s.arch);
  step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  return replay(step.graph, *fair_share(0));
}
}  // namespace

TEST_CASE("DDP golden: one bucket launches after the last microbatch's backward", "[golden]") {
  // Per microbatch: forward = block 4 + block 4 + head 1 = 9 ms; backward = head 2 + 8 + 8 =
  // 18 ms. m = 2: backward of microbatch 1 ends at 54. Then the single bucket's all-reduce
  // [54, 57], the grad-norm all-reduce [57, 60], the sharded update (free) and the weight
  // rebuild all-gather [60, 63].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(250), step);
  CHECK(step.ranks.size() == 1);
  CHECK(step.microbatches == 2);
  CHECK(r.makespan == Approx(0.063));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::forward)] == Approx(0.018));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::backward)] == Approx(0.036));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.003));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::optimizer)] == Approx(0.003));
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::weight_rebuild)] == Approx(0.003));
}

TEST_CASE("DDP golden: per-tensor buckets overlap the last backward, then queue on the stream", "[golden]") {
  // Every tensor its own bucket (19 of them). Head buckets (2) start when the head backward
  // ends at 38: [38, 44]. Layer 1's 8 buckets are ready at 46: [46, 70]. Layer 0's 8 and the
  // embedding's are ready at 54 but the stream is busy: [70, 97]. Grad norm [97, 100],
  // all-gather [100, 103].
  BuiltStep step;
  const ReplayResult r = run(tiny_ddp(1e-9), step);
  CHECK(r.makespan == Approx(0.103));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.043));
  CHECK(m.ranks[0].busy[static_cast<std::size_t>(PhaseTag::grad_sync)] == Approx(0.057));
}
