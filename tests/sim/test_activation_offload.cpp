// Fine-grained activation offloading (plan.activations.offload_modules, sim/offload_copies.hpp) on
// the 2-layer model of test_step_golden.cpp with one 16,384-token sequence, one head of 64 on one
// GPU: every GEMM 1 ms, attention and memory-bound kernels free. A microbatch's forward is
// embedding 0 + block 4 + block 4 + head 1 = 9 ms, its backward head 2 + 8 + 8 = 18 ms.
// core_attn + attn_proj move q, k, v and the attention output of each block: 4 x 64 x 16,384
// elements in BF16 = 8 MiB (each tensor 1Mi elements, Megatron-Core's minimum; the FP32
// log-sum-exp's 16,384 elements stay), 2 ms a copy at 4 MiB/ms.
#include <catch2/catch.hpp>

#include "models/memory/activations.hpp"
#include "tests/sim/fake_step.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

constexpr double kTokens = 16384;
constexpr double kBlockBytes = 4 * 64 * kTokens * 2;  // q, k, v, output in BF16

nlohmann::json architecture(std::int64_t sequence) {
  nlohmann::json a = test::tiny_dense_architecture(1, 1);
  a["sequence_length"] = sequence;
  return a;
}

Scenario offloading(const nlohmann::json& activations, std::int64_t sequence = 16384) {
  test::TempDir dir;
  const nlohmann::json plan = {{"design", "ddp"},
                               {"nodes", 1},
                               {"gpus_per_node", 1},
                               {"activations", activations},
                               {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", sequence}}}};
  const nlohmann::json doc = {{"architecture", architecture(sequence)},
                              {"plan", plan},
                              {"hardware", read_json_file(test::source_path("hardware_profiles/h100-hgx.json"))}};
  return load_scenario(dir.write("offload.json", doc.dump()), {});
}

const nlohmann::json kAttention = {{"offload_modules", {"core_attn", "attn_proj"}}};

test::FakeStep run(const Scenario& s) {
  test::FakeCosts costs;
  costs.host_copy_Bps = kBlockBytes / 2e-3;  // 2 ms a block
  return test::run_fake_step(s, costs);
}

}  // namespace

TEST_CASE("offloaded bytes: what each module moves, and tensors under 1Mi elements stay", "[unit]") {
  const Scenario off = offloading(kAttention), kept = offloading(nlohmann::json::object());
  const RoutedRows none{};
  const BlockActivations moved = offloaded_per_token(off.arch, 0, off.plan, none);
  CHECK(moved.attention * kTokens == Approx(kBlockBytes));
  CHECK(moved.mlp == 0);
  // What stays on the GPU is what the block saves less what moved; the backward has it back.
  const double all = saved_per_token(kept.arch, 0, kept.plan, none).total();
  CHECK(saved_per_token(off.arch, 0, off.plan, none).total() == Approx(all - moved.total()));
  CHECK(recomputed_per_token(off.arch, 0, off.plan, none) == Approx(moved.total()));
  // core_attn alone leaves the output (the out-projection keeps it): 3 of the 4 tensors.
  const Scenario core = offloading({{"offload_modules", {"core_attn"}}});
  CHECK(offloaded_per_token(core.arch, 0, core.plan, none).total() * kTokens == Approx(0.75 * kBlockBytes));
  // A 4,096-token sequence: each tensor has 256Ki elements, under the minimum: nothing moves.
  const Scenario short_seq = offloading(kAttention, 4096);
  CHECK(offloaded_per_token(short_seq.arch, 0, short_seq.plan, none).total() == 0);
}

TEST_CASE("offload golden: the copies run beside compute and the first reload of the backward is exposed", "[golden]") {
  // Forward: block 0 [0, 4] then its copy out [4, 6]; block 1 [4, 8], copy out [8, 10]; head
  // [8, 9]. Backward: the head [9, 11]; block 1's reload, issued as the head's backward starts,
  // waits for its copy out [10, 12]; block 0's, issued as block 1's backward starts, [12, 14].
  // Block 1's backward waits for its reload: [12, 20], 1 ms exposed; block 0 [20, 28].
  const test::FakeStep with = run(offloading(kAttention));
  const test::FakeStep without = run(offloading(nlohmann::json::object()));
  std::vector<std::pair<double, double>> copies;
  for (TaskId id = 0; id < with.step.graph.size(); ++id) {
    const Task& t = with.step.graph.task(id);
    if (t.kind == TaskKind::copy) copies.emplace_back(with.replay.start[id] * 1e3, with.replay.finish[id] * 1e3);
  }
  REQUIRE(copies.size() == 4);
  CHECK(copies[0].first == Approx(4));
  CHECK(copies[0].second == Approx(6));
  CHECK(copies[1].first == Approx(8));
  CHECK(copies[2].first == Approx(10));  // block 1's reload
  CHECK(copies[2].second == Approx(12));
  CHECK(copies[3].first == Approx(12));  // block 0's
  CHECK(copies[3].second == Approx(14));
  CHECK(with.exposed(PhaseTag::offload) == Approx(1e-3));
  CHECK(with.replay.makespan - without.replay.makespan == Approx(1e-3));
}

TEST_CASE("offload modules are refused where they move nothing or cannot run", "[unit]") {
  const auto refused = [](const nlohmann::json& activations, const std::string& needle) {
    try {
      offloading(activations);
      FAIL("accepted: " + activations.dump());
    } catch (const InputError& e) {
      CHECK(e.path() == "plan.activations.offload_modules");
      CHECK_THAT(std::string(e.what()), Catch::Contains(needle));
    }
  };
  refused({{"offload_modules", {"attn_proj"}}}, "without \"core_attn\"");
  refused({{"offload_modules", {"expert_fc1"}}}, "no MoE layers");
  refused({{"offload_modules", {"attn_norm"}}}, "fused into the QKV projection");
  refused({{"recompute", "full"}, {"offload_modules", {"core_attn"}}}, "recompute \"none\" or \"selective\"");
  refused({{"offload_modules", nlohmann::json::array()}}, "is empty");
  CHECK_THROWS_AS(offloading({{"offload_modules", {"mlp_fc1"}}}), InputError);
}

TEST_CASE("offloading needs the profile's host link", "[unit]") {
  test::TempDir dir;
  nlohmann::json hw = read_json_file(test::source_path("hardware_profiles/h100-hgx.json"));
  hw["node"].erase("host_link_GBps_per_direction");
  const nlohmann::json doc = {{"architecture", architecture(16384)},
                              {"plan",
                               {{"design", "ddp"},
                                {"nodes", 1},
                                {"gpus_per_node", 1},
                                {"activations", kAttention},
                                {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 16384}}}}},
                              {"hardware", hw}};
  try {
    load_scenario(dir.write("no-link.json", doc.dump()), {});
    FAIL("accepted without a host link");
  } catch (const InputError& e) {
    CHECK(e.path() == "plan.activations.offload_modules");
    CHECK_THAT(std::string(e.what()), Catch::Contains("node.host_link_GBps_per_direction"));
  }
}
