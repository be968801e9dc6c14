// Megatron-Core's DDP overlap switches on the hand-worked 2-layer step of test_step_golden.cpp
// (every GEMM 1 ms, memory-bound kernels and attention free): per microbatch the forward is
// embedding 0 + block 4 + block 4 + head 1 = 9 ms and the backward head 2 + 8 + 8 = 18 ms; every
// tensor is its own gradient bucket (19: the head's 2, 8 per block, the embedding's 1).
#include <catch2/catch.hpp>

#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_step.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario tiny_ddp(const nlohmann::json& ddp, const std::string& rebuild) {
  test::TempDir dir;
  nlohmann::json plan = {{"design", "ddp"},
                         {"nodes", 1},
                         {"gpus_per_node", 2},
                         {"ddp", ddp},
                         {"optimizer", {{"weight_rebuild", rebuild}}},
                         {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 64}}}};
  plan["ddp"]["bucket_cap_MiB"] = 1e-9;  // every tensor its own bucket
  const nlohmann::json doc = {{"architecture", test::tiny_dense_architecture()},
                              {"plan", plan},
                              {"hardware", read_json_file(test::source_path("hardware_profiles/b300-hgx.json"))}};
  return load_scenario(dir.write("tiny.json", doc.dump()), {});
}

using Run = test::FakeStep;

Run run(const Scenario& s, double collective_s) {
  test::FakeCosts costs;
  costs.collective_s = collective_s;
  return test::run_fake_step(s, costs);
}

// The rank's all-gathers of the weights, in stream order: (start, end) in ms.
std::vector<std::pair<double, double>> weight_gathers(const Run& r) {
  std::vector<std::pair<double, double>> out;
  for (TaskId id = 0; id < r.step.graph.size(); ++id) {
    const Task& t = r.step.graph.task(id);
    if (t.rank == 0 && t.phase == PhaseTag::weight_rebuild && t.kind == TaskKind::collective) {
      out.emplace_back(r.replay.start[id] * 1e3, r.replay.finish[id] * 1e3);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("DDP golden: without overlap_grad_reduce every bucket is reduced after the backward", "[golden]") {
  // Collectives 3 ms. The last backward ends at 54; the 19 buckets then run back to back on the
  // data-parallel stream [54, 111], the loss [111, 114], the gradient norm [114, 117] and the
  // coalesced weight all-gather [117, 120]. With overlap (test_step_golden.cpp) the same step
  // takes 106 ms: the head's and block 1's buckets start during the backward.
  const Run r = run(tiny_ddp({{"overlap_grad_reduce", false}}, "coalesced_copy"), 3e-3);
  CHECK(r.replay.makespan == Approx(0.120));
  CHECK(r.exposed(PhaseTag::grad_sync) == Approx(0.057));
  CHECK(run(tiny_ddp({{"overlap_grad_reduce", true}}, "coalesced_copy"), 3e-3).replay.makespan == Approx(0.106));
}

TEST_CASE("DDP golden: overlap_param_gather gathers bucket by bucket beside the first forward", "[golden]") {
  // Collectives 1 ms. The embedding's pre-hook dispatches its bucket [0, 1] and, waiting for it,
  // block 0's 8 [1, 9]; block 0's waits dispatch block 1's 8 [9, 17], block 1's the head's 2
  // [17, 19]. The first forward: embedding at 1, block 0 [9, 13] (waits for its last bucket),
  // block 1 [17, 21], head [21, 22]. Then backward 0 [22, 40], forward 1 [40, 49], backward 1
  // [49, 67] with the buckets reduced as they fill: the head's [51, 53], block 1's [59, 67],
  // block 0's [67, 75], the embedding's [75, 76]; loss [76, 77], gradient norm [77, 78]; the
  // update only casts the shard into the parameter buffer, no gather at the end.
  const Run r = run(tiny_ddp({{"overlap_param_gather", true}}, "in_place"), 1e-3);
  const auto gathers = weight_gathers(r);
  REQUIRE(gathers.size() == 19);
  CHECK(gathers.front().first == Approx(0.0));
  CHECK(gathers[1].first == Approx(1.0));
  CHECK(gathers[9].first == Approx(9.0));
  CHECK(gathers[17].first == Approx(17.0));
  CHECK(gathers.back().second == Approx(19.0));
  CHECK(r.replay.makespan == Approx(0.078));
  // At the step's end instead: one coalesced all-gather after the gradient norm, [65, 66].
  const Run end = run(tiny_ddp({}, "in_place"), 1e-3);
  REQUIRE(weight_gathers(end).size() == 1);
  CHECK(weight_gathers(end).front().first == Approx(65.0));
  CHECK(end.replay.makespan == Approx(0.066));
}

TEST_CASE(
    "overlap_param_gather needs overlapped reduction and in-place gathers, inert without the distributed "
    "optimizer",
    "[unit]") {
  const auto refusal = [](const nlohmann::json& ddp, const std::string& rebuild) {
    try {
      tiny_ddp(ddp, rebuild);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refusal({{"overlap_param_gather", true}, {"overlap_grad_reduce", false}}, "in_place"),
             Catch::Contains("plan.ddp.overlap_param_gather") && Catch::Contains("overlap_grad_reduce true"));
  CHECK_THAT(refusal({{"overlap_param_gather", true}}, "coalesced_copy"),
             Catch::Contains("\"in_place\"") && Catch::Contains("now \"coalesced_copy\""));
  CHECK(refusal({{"overlap_param_gather", true}}, "in_place").empty());
  // Without the distributed optimizer every rank updates its own weights: nothing to gather.
  const nlohmann::json replicated = {{"overlap_param_gather", true}, {"distributed_optimizer", false}};
  CHECK(refusal(replicated, "coalesced_copy").empty());
  const Run r = run(tiny_ddp(replicated, "coalesced_copy"), 1e-3);
  CHECK(weight_gathers(r).empty());
  CHECK(r.replay.makespan ==
        Approx(run(tiny_ddp({{"distributed_optimizer", false}}, "coalesced_copy"), 1e-3).replay.makespan));
}
