// FSDP2 with expert parallelism, as torchtitan runs MoE models (torchtitan/distributed/fsdp.py
// apply_fsdp_to_decoder, parallel_dims.py): each rank runs E / EP experts; the routed experts'
// weights are sharded over the experts' shard group (shard degree x TP / EP, "efsdp") and the rest
// over the shard group, one all-gather and one reduce-scatter per group; HSDP replicas are shared.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "models/common/errors.hpp"
#include "models/memory/persistent_state.hpp"
#include "models/plan/design_spec.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/step_builder.hpp"
#include "sim/step_simulation.hpp"
#include "studies/plan_search.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario fig8_fsdp(const std::string& design, std::int64_t nodes, std::int64_t experts = 32) {
  return load_scenario(test::source_path("scenarios/fig8/moe-fsdp.json"),
                       {"design=" + design, "plan.nodes=" + std::to_string(nodes),
                        "architecture.moe.num_experts=" + std::to_string(experts)});
}

struct Gathers {
  int count = 0;
  double link_bytes = 0;
};

// The forward all-gathers of `layer` in microbatch 0 on rank 0 (the comm_dp stream).
Gathers forward_gathers(const BuiltStep& step, std::int64_t layer, CollectiveKind kind) {
  Gathers g;
  bool backward = false;
  for (TaskId id = 0; id < step.graph.size(); ++id) {
    const Task& t = step.graph.task(id);
    if (t.rank != 0 || t.microbatch != 0) continue;
    if (t.stream == StreamKind::compute && t.phase == PhaseTag::backward) backward = true;
    if (t.stream != StreamKind::comm_dp || t.layer != layer || t.coll != kind) continue;
    if (kind == CollectiveKind::all_gather && backward) continue;
    ++g.count;
    g.link_bytes += t.link_bytes[0] + t.link_bytes[1];
  }
  return g;
}

double routed_numel(const Inventory& inv, std::int64_t layer) {
  double n = 0;
  for (const auto& t : inv.tensors)
    if (t.layer == layer && t.cls == TensorClass::routed_expert) n += static_cast<double>(t.numel);
  return n;
}

double layer_numel(const Inventory& inv, std::int64_t layer) {
  double n = 0;
  for (const auto& t : inv.tensors)
    if (t.layer == layer) n += static_cast<double>(t.numel);
  return n;
}

}  // namespace

TEST_CASE("FSDP with EP: the grammar reads back and the rules name their path", "[unit]") {
  for (const std::string spec : {"fsdp+ep8", "fsdp+hsdp16+ep8", "fsdp+ep8+pp2", "fsdp+ep4+noreshard"}) {
    CAPTURE(spec);
    const Scenario s = fig8_fsdp(spec, 8);
    CHECK(design_name(s.plan) == spec);
    CHECK(std::string(design_of(s.plan).word()) == "fsdp");
  }
  // Expert TP is not modelled under FSDP; EP must divide one shard group's ranks.
  const auto refused = [](const std::vector<std::string>& sets) {
    try {
      load_scenario(test::source_path("scenarios/fig8/moe-fsdp.json"), sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refused({"plan.nodes=8", "design=fsdp+ep8", "plan.expert_parallel.tensor_degree=2"}),
             Catch::Contains("expert_parallel.tensor_degree") && Catch::Contains("not modeled"));
  CHECK_THAT(refused({"plan.nodes=8", "architecture.moe.num_experts=32", "design=fsdp+hsdp4+ep8"}),
             Catch::Contains("expert_parallel.degree") && Catch::Contains("shard group"));
}

TEST_CASE("FSDP with EP: the experts' shard group and its members, rank by rank", "[unit]") {
  // 64 GPUs, HSDP shard groups of 16, EP 8: each shard group's 16 ranks split EP 8 innermost, so an
  // expert shard is sharded over 2 ranks 8 apart (different hosts) and replicated over 4 groups.
  const Scenario s = fig8_fsdp("fsdp+hsdp16+ep8", 8);
  REQUIRE(s.plan.expert_shard_group() == 2);
  const CommunicatorShape shape = communicator_shape(s.plan, Communicator::expert_shard);
  CHECK(shape.ranks == 2);
  CHECK(shape.ranks_per_node == 1);
  std::map<std::int64_t, std::set<std::int64_t>> groups, replicas;
  for (std::int64_t r = 0; r < s.plan.world(); ++r) {
    const RankCoords c = coords_of(s.plan, r);
    groups[communicator_instance(s.plan, c, Communicator::expert_shard)].insert(r);
    replicas[communicator_instance(s.plan, c, Communicator::hsdp_replica)].insert(r);
  }
  CHECK(groups.size() == 32);
  for (const auto& [instance, ranks] : groups) {
    CAPTURE(instance);
    REQUIRE(ranks.size() == 2);
    CHECK(*ranks.rbegin() - *ranks.begin() == 8);
    CHECK(*ranks.begin() / 16 == *ranks.rbegin() / 16);  // inside one shard group
  }
  // The replica groups are the dense ones: rank r and r + 16, r + 32, r + 48.
  CHECK(replicas.size() == 16);
  for (const auto& [instance, ranks] : replicas)
    CHECK(ranks == std::set<std::int64_t>{instance, instance + 16, instance + 32, instance + 48});
  // Without HSDP the experts' shard group is the EP-DP group.
  const Scenario full = fig8_fsdp("fsdp+ep8", 8);
  CHECK(full.plan.expert_shard_group() == full.plan.ep_dp());
}

TEST_CASE("FSDP with EP: a block's gathers and reduce-scatters, one per shard group, by hand", "[golden]") {
  // 8 GPUs of one host, EP 4: the dense part of a block over all 8 ranks, the 32 / 4 = 8 local
  // experts over the 2 ranks holding them. The fake cost book charges each collective of more
  // than one rank its request's bytes S (the whole gathered or reduced tensor), one of one rank
  // nothing.
  const Scenario s = fig8_fsdp("fsdp+ep4", 1);
  REQUIRE(s.plan.shard_group() == 8);
  REQUIRE(s.plan.expert_shard_group() == 2);
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  const std::int64_t layer = 1;
  REQUIRE(s.arch.is_moe_layer(layer));
  const double experts = routed_numel(inv, layer) / 4, dense = layer_numel(inv, layer) - routed_numel(inv, layer);
  const Gathers ag = forward_gathers(step, layer, CollectiveKind::all_gather);
  CHECK(ag.count == 2);
  CHECK(ag.link_bytes == Approx(2.0 * (dense + experts)));  // BF16 weights
  const Gathers rs = forward_gathers(step, layer, CollectiveKind::reduce_scatter);
  CHECK(rs.count == 2);
  CHECK(rs.link_bytes == Approx(4.0 * (dense + experts)));  // FP32 reduction
  // The embedding has no experts: one of each.
  CHECK(forward_gathers(step, -1, CollectiveKind::all_gather).count == 1);
  // EP 8 on 8 GPUs: each rank holds its 4 experts whole (a shard group of one moves nothing).
  const Scenario whole = fig8_fsdp("fsdp+ep8", 1);
  REQUIRE(whole.plan.expert_shard_group() == 1);
  const BuiltStep step8 = build_step(whole.arch, inv, whole.plan, test::FakeCosts{}, SimOptions{});
  const Gathers ag8 = forward_gathers(step8, layer, CollectiveKind::all_gather);
  CHECK(ag8.count == 2);
  CHECK(ag8.link_bytes == Approx(2.0 * dense));
}

TEST_CASE("FSDP with EP holds its experts' shard and gathers only its own experts", "[unit]") {
  // 64 GPUs, EP 8: every rank gathers the dense part of a block and its 4 of 32 experts.
  const auto ep = test::run_ledger(fig8_fsdp("fsdp+ep8", 8));
  const auto plain = test::run_ledger(fig8_fsdp("fsdp", 8));
  const auto gathered = [](const test::LedgerRun& r) {
    for (const auto& item : r.ledger.stages.at(0).phases.front().items)
      if (item.cls == MemClass::fsdp_materialized) return item.bytes;
    return 0.0;
  };
  double largest_ep = 0, largest_plain = 0;
  for (std::int64_t l = -1; l <= ep.scenario.arch.num_layers; ++l) {
    largest_ep = std::max(largest_ep, layer_numel(ep.inventory, l) - routed_numel(ep.inventory, l) * 7.0 / 8.0);
    largest_plain = std::max(largest_plain, layer_numel(ep.inventory, l));
  }
  const double prefetch = 1.0 + static_cast<double>(ep.scenario.plan.fsdp_prefetch);
  CHECK(gathered(ep) == Approx(prefetch * 2.0 * largest_ep));
  CHECK(gathered(plain) == Approx(prefetch * 2.0 * largest_plain));
  // The persistent state is the same: the sparse region is the dense one (8 x 8 = 64 ranks).
  CHECK(ep.ledger.stages.at(0).persistent_bytes == Approx(plain.ledger.stages.at(0).persistent_bytes).epsilon(1e-3));
}

TEST_CASE("FSDP shards an expert tensor on dim 1 when shard degree x EP exceeds the experts", "[unit]") {
  // torchtitan's Shard(1) placement: 8 experts on 64 ranks would leave 56 ranks with padding rows
  // of whole experts on dim 0 (ceil(8 / 64) = 1 expert each); on dim 1 each holds 1/64.
  const TensorInfo t{"blocks.0.moe.experts.w_up", {8, 1024, 512}, 8LL * 1024 * 512, TensorClass::routed_expert, 0};
  ParallelPlan plan;
  plan.design = "fsdp";
  plan.nodes = 8;
  plan.gpus_per_node = 8;
  LocalTensor lt;
  lt.tensor = &t;
  lt.local_numel = static_cast<double>(t.numel);
  OptimizerShardReport report;
  const auto items = fsdp_sharded_state({lt}, plan, report);
  CHECK(items.front().bytes == Approx(4.0 * 8 * 1024 * 512 / 64));
  // EP 4 on the same 64 ranks: 2 local experts over 16 ranks: dim 1 again, 1/64 of the whole.
  plan.ep = 4;
  lt.local_numel = static_cast<double>(t.numel) / 4;
  CHECK(fsdp_sharded_state({lt}, plan, report).front().bytes == Approx(4.0 * 8 * 1024 * 512 / 64));
  // 64 experts, EP 8 on 64 ranks: 8 local experts over 8 ranks, one each on dim 0.
  const TensorInfo wide{"blocks.0.moe.experts.w_up", {64, 1024, 512}, 64LL * 1024 * 512, TensorClass::routed_expert, 0};
  lt.tensor = &wide;
  plan.ep = 8;
  lt.local_numel = static_cast<double>(wide.numel) / 8;
  CHECK(fsdp_sharded_state({lt}, plan, report).front().bytes == Approx(4.0 * 1024 * 512));
}

TEST_CASE("The planner searches EP degrees for FSDP and HSDP", "[unit][plan]") {
  const PlanSearchResult r = test::plan_search(
      "scenarios/fig8/moe-fsdp.json", {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=524288"}, 16,
      {"design=fsdp,hsdp", "microbatch=2", "recompute=none", "pp=1", "ep=1,8"});
  std::set<std::pair<std::string, std::int64_t>> evaluated;
  for (const auto& rec : r.records) {
    const PlanCandidate& c = r.candidates.at(rec.candidate);
    evaluated.insert({c.family, c.values.at("ep").get<std::int64_t>()});
  }
  CHECK(evaluated.count({"fsdp", 8}) == 1);
  CHECK(evaluated.count({"hsdp", 8}) == 1);
  CHECK(evaluated.count({"fsdp", 1}) == 1);
}
