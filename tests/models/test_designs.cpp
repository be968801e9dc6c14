// The registered designs (models/plan/designs/): every one is listed, chosen by its word and
// options, simulates, and is searched by the planner on request; ZeRO-2's and FSDP2-without-
// reshard's mechanisms against hand-computed numbers.
#include <catch2/catch.hpp>

#include "models/memory/ledger.hpp"
#include "models/plan/design_spec.hpp"
#include "models/plan/designs/design.hpp"
#include "sim/step_simulation.hpp"
#include "studies/plan_search.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario fig8_design(const std::string& design) {
  return load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"),
                       {"design=" + design, "architecture.moe.num_experts=32"});
}

double bytes(const StepResult& r, CollectiveKind kind) {
  const auto& b = r.bytes_per_rank[static_cast<std::size_t>(kind)];
  return b[0] + b[1];
}

double persistent_per_param(const std::string& design, std::int64_t dp) {
  const TensorInfo t{"dense", {4096, 4096}, 4096LL * 4096, TensorClass::attention, 0};
  ParallelPlan plan;
  plan.design = design;
  plan.gpus_per_node = dp;
  plan.optimizer.layout = design_defaults(design).optimizer_layout;
  return test::persistent_bytes_per_param(t, static_cast<double>(t.numel), plan.dp(), plan);
}

}  // namespace

TEST_CASE("Every design is one registered entry, chosen by its word and options", "[unit]") {
  const std::vector<std::string> names = {"fsdp2_full_reshard",  "olmo_ddp", "ddp_replicated_optimizer",
                                          "fsdp2_shard_grad_op", "zero2",    "fsdp1_full_shard"};
  CHECK(design_entries().registration_order() == names);
  const std::pair<const char*, const char*> chosen[] = {{"fsdp", "fsdp2_full_reshard"},
                                                        {"fsdp+noreshard", "fsdp2_shard_grad_op"},
                                                        {"fsdp+fsdp1", "fsdp1_full_shard"},
                                                        {"fsdp+hsdp4", "fsdp2_full_reshard"},
                                                        {"ddp", "olmo_ddp"},
                                                        {"ddp+nodistopt", "ddp_replicated_optimizer"},
                                                        {"zero2+ep8", "zero2"}};
  for (const auto& [spec, entry] : chosen) {
    CAPTURE(spec);
    const Scenario s = fig8_design(spec);
    CHECK(design_of(s.plan).name() == entry);
    CHECK(design_name(s.plan) == spec);  // the grammar reads back
  }
  // The names in `moesim list designs`.
  test::TempDir dir;
  REQUIRE(test::run_cli("list designs --json " + dir.path("designs.json")) == 0);
  const auto doc = nlohmann::json::parse(test::slurp(dir.path("designs.json")));
  REQUIRE(doc.at("designs").size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(doc["designs"][i]["name"] == names[i]);
}

TEST_CASE("ZeRO-2 keeps 2 + 16/D bytes per parameter (AdamW, FP32 states and gradient partition)", "[unit]") {
  // Rajbhandari et al. 2020, Figure 1's P_os+g with an FP32 gradient partition: 2 + (4 + 12)/D.
  for (const std::int64_t d : {2, 4, 8}) {
    CAPTURE(d);
    CHECK(persistent_per_param("zero2", d) == Approx(2.0 + 16.0 / static_cast<double>(d)));
    CHECK(persistent_per_param("ddp", d) == Approx(6.0 + 12.0 / static_cast<double>(d)));  // for contrast
  }
}

TEST_CASE("ZeRO-2 reduce-scatters every microbatch and all-gathers the weights once per step", "[unit]") {
  const StepResult zero2 = simulate(fig8_design("zero2")).result;
  const StepResult fsdp = simulate(fig8_design("fsdp")).result;
  const StepResult ddp = simulate(fig8_design("ddp")).result;
  // The same gradient bytes per microbatch as FSDP2's per-unit reduce-scatters, over the step.
  CHECK(bytes(zero2, CollectiveKind::reduce_scatter) == Approx(bytes(fsdp, CollectiveKind::reduce_scatter)));
  // The rebuild: one all-gather of the compute weights per step, as the distributed optimizer.
  CHECK(bytes(zero2, CollectiveKind::all_gather) == Approx(bytes(ddp, CollectiveKind::all_gather)));
  // No gradient all-reduce, only the loss and gradient-norm scalars.
  CHECK(bytes(zero2, CollectiveKind::all_reduce) < 1024);
  CHECK_FALSE(zero2.ledger.oom);
}

TEST_CASE("FSDP2 without reshard_after_forward gathers each unit once per microbatch and holds the stage", "[unit]") {
  const StepResult full = simulate(fig8_design("fsdp")).result;
  const StepResult kept = simulate(fig8_design("fsdp+noreshard")).result;
  // Full reshard gathers every block twice and the embedding and LM head once per microbatch.
  const double gathered_full = bytes(full, CollectiveKind::all_gather);
  const double gathered_kept = bytes(kept, CollectiveKind::all_gather);
  CHECK(gathered_kept < gathered_full);
  CHECK(gathered_kept > gathered_full / 2);
  CHECK(bytes(kept, CollectiveKind::reduce_scatter) == Approx(bytes(full, CollectiveKind::reduce_scatter)));
  // At the forward's end the stage holds every unit gathered: the whole model in BF16.
  const auto r = test::run_ledger(fig8_design("fsdp+noreshard"));
  const PhaseSet& forward = r.ledger.stages.at(0).phases.front();
  double held = 0;
  for (const auto& item : forward.items) {
    if (item.cls == MemClass::fsdp_materialized) held += item.bytes;
  }
  CHECK(held == Approx(2.0 * r.inventory.params_total));
  CHECK(kept.ledger.stages.at(0).peak_allocated > full.ledger.stages.at(0).peak_allocated);
}

TEST_CASE("The planner searches the designs it does not search by default when asked", "[unit][plan]") {
  const PlanSearchResult r = test::plan_search(
      "scenarios/fig8/moe-ddp.json", {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144"}, 8,
      {"design=zero2,fsdp-noreshard,fsdp1,ddp", "microbatch=2", "recompute=none", "pp=1"});
  std::set<std::string> families;
  for (const auto& f : r.families) {
    if (f.record) families.insert(f.family);
  }
  CHECK(families == std::set<std::string>{"zero2", "fsdp-noreshard", "fsdp1", "ddp"});
}
