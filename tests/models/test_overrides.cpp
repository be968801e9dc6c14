// --set and the scenario's own "set" block.
#include <catch2/catch.hpp>

#include "models/input/overrides.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("Override expressions parse paths, indices and JSON values", "[unit]") {
  const Override a = parse_override("plan.pipeline.layer_split[1]=3", "--set");
  CHECK(a.dotted == "plan.pipeline.layer_split[1]");
  CHECK(a.value == 3);
  CHECK(parse_override("plan.design=fsdp", "--set").value == "fsdp");
  CHECK(parse_override("plan.design=\"fsdp\"", "--set").value == "fsdp");
  CHECK(parse_override("architecture.dense_layers=[0,1]", "--set").value == nlohmann::json::array({0, 1}));
  CHECK(parse_override("plan.ddp.distributed_optimizer=false", "--set").value == false);
  CHECK_THROWS_AS(parse_override("=3", "--set"), InputError);
  CHECK_THROWS_AS(parse_override("a..b=3", "--set"), InputError);
  CHECK_THROWS_AS(parse_override("a[x]=3", "--set"), InputError);
}

TEST_CASE("Overrides apply in order: scenario set block, then --set", "[unit]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"),
                                   {"architecture.moe.num_experts=64", "plan.expert_parallel.degree=8",
                                    "plan.batch.global_batch_tokens=131072", "flop_convention=palm"});
  CHECK(s.arch.moe->num_experts == 64);
  CHECK(s.plan.ep == 8);
  CHECK(s.plan.global_batch_tokens == 131072);
  CHECK(s.flop_convention == "palm");
  CHECK(s.resolved["architecture"]["moe"]["num_experts"] == 64);

  test::TempDir dir;
  nlohmann::json doc = test::inline_fig8_document("ddp");
  doc["set"] = {{"architecture.moe.num_experts", 32}};
  const std::string file = dir.write("s.json", doc.dump());
  CHECK(load_scenario(file, {}).arch.moe->num_experts == 32);
  CHECK(load_scenario(file, {"architecture.moe.num_experts=8"}).arch.moe->num_experts == 8);
}

TEST_CASE("Overrides can add optional sections", "[unit]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"),
                                   {"plan.pipeline.degree=2", "plan.pipeline.layer_split=[5,3]"});
  CHECK(s.plan.pp == 2);
  CHECK(s.plan.pp_layer_split == std::vector<std::int64_t>{5, 3});
}

TEST_CASE("A null override removes the key, and a missing one stays missing", "[unit]") {
  const std::vector<std::string> modules{"plan.activations.recompute=\"selective\"",
                                         "plan.activations.recompute_modules=[\"core_attn\"]"};
  CHECK(!load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"), modules).plan.recompute_modules.empty());
  std::vector<std::string> removed = modules;
  removed.emplace_back("plan.activations.recompute_modules=null");
  removed.emplace_back("plan.activations.recompute=\"full\"");
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"), removed);
  CHECK(s.plan.recompute_modules.empty());
  CHECK(s.plan.recompute == Recompute::full);
  CHECK(!s.resolved["plan"]["activations"].contains("recompute_modules"));
  // Removing what is not there adds nothing on the way.
  const Scenario t =
      load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"), {"plan.context_parallel.variant=null"});
  CHECK(!t.resolved["plan"].contains("context_parallel"));
}
