// The planner's step-time lower bound (sim/step_bound.hpp) never exceeds the replayed step: on
// every bundled Figure 8 plan, on pipelined and EP plans with uneven routing, and on sixty
// plans drawn from the plan-space fuzz decoder with a fixed seed. A bound above the replay would
// make `moesim plan` prune a plan that could have won.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "fuzz/plan_space.hpp"
#include "models/common/errors.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/input/scenario.hpp"
#include "sim/layer_split.hpp"
#include "sim/step_bound.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// The bound and the replayed step of `s`; the bound must be positive and at most the step.
void check_bound(const Scenario& s) {
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const StepBound bound = step_time_lower_bound(s.arch, build_inventory(s.arch), s.plan, costs);
  const StepResult r = simulate(s, costs, SimOptions{}).result;
  INFO(r.design << " pp " << s.plan.pp << " m " << r.microbatches << ": bound " << bound.step_s << " s, replay "
                << r.step_time_s << " s");
  CHECK(bound.step_s > 0);
  CHECK(bound.step_s <= r.step_time_s * (1 + 1e-12));
}

}  // namespace

TEST_CASE("Step bound: at most the replay with MXFP8 linears and FP8 dispatch", "[unit][bound]") {
  const std::string file = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  check_bound(load_scenario(file, {"plan.precision.linears.routed_expert=mxfp8"}));
  check_bound(load_scenario(file, {"plan.precision.linears.routed_expert=mxfp8", "plan.precision.ep_dispatch=mxfp8",
                                   "plan.precision.linears.attention=mxfp8"}));
  check_bound(load_scenario(test::source_path("scenarios/fig8/moe-fsdp.json"),
                            {"plan.precision.linears.routed_expert=mxfp8", "plan.precision.linears.dense_mlp=fp8"}));
}

TEST_CASE("Step bound: at most the replayed step on the bundled Figure 8 plans", "[unit][bound]") {
  for (const char* file : {"moe-ddp.json", "moe-ddp-ep8.json", "moe-fsdp.json", "dense-ddp.json", "dense-fsdp.json"}) {
    check_bound(load_scenario(test::source_path(std::string("scenarios/fig8/") + file), {}));
  }
}

TEST_CASE("Step bound: pipelines (V-shape and zero-bubble too), recompute and skewed routing stay below the replay",
          "[unit][bound]") {
  const std::vector<std::vector<std::string>> plans = {
      {"design=ddp+ep4+pp2", "plan.batch.global_batch_tokens=262144"},
      {"design=ddp+ep2+pp4+v2", "plan.batch.global_batch_tokens=524288", "plan.activations.recompute=full"},
      {"design=ddp+ep8", "plan.routing.model=zipf", "plan.routing.zipf_exponent=1.2"},
      {"design=ddp+ep4+pp2", "plan.routing.model=random", "plan.activations.recompute=selective",
       "plan.batch.global_batch_tokens=262144"},
      {"design=fsdp+pp2", "plan.batch.global_batch_tokens=262144"},
      {"design=fsdp+pp4+v2", "plan.batch.global_batch_tokens=524288"},
      // The V-shape and zero-bubble schedules (a W pass last on a stage closes no chain).
      {"design=ddp+ep2+pp4+1f1b_v", "plan.batch.global_batch_tokens=524288", "plan.activations.recompute=full"},
      {"design=ddp+ep2+pp4+zb_h1", "plan.batch.global_batch_tokens=524288"},
      {"design=fsdp+pp4+zbv", "plan.batch.global_batch_tokens=524288"},
      // FSDP with EP (two gathers per MoE block), HSDP replicas, and without resharding.
      {"design=fsdp+ep8", "plan.batch.global_batch_tokens=262144"},
      {"design=fsdp+ep4+pp2", "plan.batch.global_batch_tokens=262144"},
      {"design=fsdp+ep2+noreshard", "plan.batch.global_batch_tokens=262144"},
      // The EP all-to-all overlap's fused passes, without and with a pipeline.
      {"design=ddp+ep8", "plan.expert_parallel.a2a_overlap=true", "plan.batch.global_batch_tokens=262144"},
      {"design=ddp+ep2+pp4+v2", "plan.expert_parallel.a2a_overlap=true", "plan.batch.global_batch_tokens=524288"},
  };
  for (const auto& sets : plans) check_bound(load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets));
  check_bound(load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
                            {"plan.nodes=16", "plan.batch.global_batch_tokens=2097152"}));
  // Chunks without decoder layers: the embedding alone first, the MTP layer and loss alone last.
  check_bound(load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
                            {"plan.nodes=16", "plan.batch.global_batch_tokens=2097152",
                             "plan.pipeline.schedule=\"interleaved_1f1b\"", "plan.pipeline.layout=\"E|(tt|)*30tmL\""}));
  // Tied embeddings under FSDP with PP: the head's stage holds a copy it never gathers as a unit.
  check_bound(test::gallery("mpt-7b", {"design=fsdp+pp2", "plan.nodes=16", "plan.batch.global_batch_tokens=524288"}));
  // FSDP2 under the pipeline: gathered once per pass that follows a forward, reduced once a step.
  check_bound(
      load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
                    {"design=fsdp+hsdp16+ep2+pp16", "plan.nodes=32", "plan.batch.global_batch_tokens=4194304"}));
  check_bound(load_scenario(
      test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
      {"design=fsdp+hsdp16+ep2+noreshard+pp16+v2", "plan.nodes=32", "plan.batch.global_batch_tokens=4194304"}));
  // Where FSDP's gathers dominate, the bound is their serial stream: within a quarter of the step
  // (the replay slows the gathers beside compute, interference.comm_slowdown_with_compute).
  const Scenario gathers =
      load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
                    {"design=fsdp+hsdp16+ep2", "plan.nodes=32", "plan.batch.global_batch_tokens=4194304"});
  check_bound(gathers);
  const ProfileCostBook costs(gathers.hardware, gathers.cost_models);
  const double bound = step_time_lower_bound(gathers.arch, build_inventory(gathers.arch), gathers.plan, costs).step_s;
  CHECK(bound > 0.75 * simulate(gathers, costs, SimOptions{}).result.step_time_s);
}

TEST_CASE("Step bound: at most the replay on 60 plans drawn from the fuzz plan space", "[unit][bound]") {
  std::mt19937 draw(20261201);  // fixed seed: the same plans every run
  std::size_t checked = 0;
  for (int i = 0; i < 20000 && checked < 60; ++i) {
    std::string bytes(40, '\0');
    for (auto& b : bytes) b = static_cast<char>(draw() & 0xff);
    std::vector<std::string> sets = fuzz::plan_space_overrides(bytes);
    sets.push_back("plan.nodes=1");  // keep each replay small: one node, up to 8 GPUs
    Scenario s;
    try {
      s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets);
    } catch (const InputError&) {
      continue;  // an impossible plan or a field out of range: nothing to bound
    }
    // Small replays only (the suite's time): at most 8 microbatches and 64 experts.
    if (batch_shape(s.plan, s.arch).microbatches > 8 || (s.arch.moe && s.arch.moe->num_experts > 64)) continue;
    check_bound(s);
    ++checked;
  }
  CHECK(checked == 60);
}

TEST_CASE("Balanced layer split: whole layers per virtual stage, the LM head's stage lighter", "[unit][bound]") {
  // DeepSeek-V3 on PP8: its 129k-word LM head and MTP module weigh on the last stage.
  const Scenario s =
      load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"), {"plan.pipeline.degree=8"});
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const std::vector<std::int64_t> split = balanced_layer_split(s.arch, s.plan, costs);
  REQUIRE(split.size() == 8);
  std::int64_t sum = 0;
  for (auto n : split) {
    CHECK(n >= 1);
    sum += n;
  }
  CHECK(sum == s.arch.num_layers);
  // No stage's compute is above the even split's worst: the split minimises the largest one.
  const std::vector<double> unit = unit_compute_times(s.arch, s.plan, costs);
  const auto worst = [&](const std::vector<std::int64_t>& parts) {
    double most = 0;
    std::size_t layer = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      double t = (k == 0 ? unit.front() : 0.0) + (k + 1 == parts.size() ? unit.back() : 0.0);
      for (std::int64_t i = 0; i < parts[k]; ++i) t += unit[1 + layer++];
      most = std::max(most, t);
    }
    return most;
  };
  CHECK(worst(split) <= worst(virtual_stage_layer_counts(s.plan, s.arch)));
  CHECK(split.back() < split[1]);  // the head's stage gives up layers
}

TEST_CASE("Step bound: the strategies' compute-stream kernels and final syncs stay below the replay", "[unit][bound]") {
  // DDP's accumulates and its last microbatch's reductions with every switch that moves them,
  // ZeRO-2's per-microbatch reduce-scatters, FSDP1 and FSDP2's copies.
  const std::vector<std::vector<std::string>> plans = {
      {"design=ddp+ep4+pp2", "plan.ddp.overlap_grad_reduce=false"},
      {"design=ddp+ep4+pp2+v2", "plan.ddp.overlap_param_gather=true", "plan.optimizer.weight_rebuild=in_place",
       "plan.ddp.grad_sync=reduce_scatter"},
      {"design=ddp+ep8", "plan.optimizer.weight_rebuild=in_place"},
      {"design=ddp+ep2+pp4", "plan.ddp.grad_accumulation_fusion=true"},
      {"design=ddp+ep4+nodistopt+pp2"},
      {"design=ddp+ep2+pp4+zb_h1"},
      {"design=zero2+ep4+pp2"},
      {"design=zero2+ep8"},
      {"design=fsdp+fsdp1"},
      {"design=fsdp+ep4+pp2+noreshard"},
      // As few microbatches as stages: the first backward waits for microbatch 0's round trip.
      {"design=ddp+ep2+pp4", "plan.batch.global_batch_tokens=131072"},
      {"design=ddp+ep2+pp4+v2", "plan.batch.global_batch_tokens=131072"},
      {"design=ddp+ep2+pp4+1f1b_v", "plan.batch.global_batch_tokens=131072"},
      {"design=fsdp+pp4+zbv", "plan.batch.global_batch_tokens=131072"},
  };
  for (auto sets : plans) {
    if (sets.back().rfind("plan.batch.", 0) != 0) sets.push_back("plan.batch.global_batch_tokens=524288");
    INFO(sets.front());
    check_bound(load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets));
  }
}

TEST_CASE("Step bound: a DDP pipeline's bound counts its accumulates and its last reductions", "[unit][bound]") {
  // Olmo-core DDP at 256 GPUs of DeepSeek-V3: every microbatch's FP32 accumulate and the last
  // microbatch's bucket all-reduces lie on the chain (0.88 of the step with them).
  const Scenario s = load_scenario(test::source_path("scenarios/deepseek-v3-ddp-ep8-pp16.json"),
                                   {"plan.nodes=32", "plan.batch.global_batch_tokens=4194304"});
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const double bound = step_time_lower_bound(s.arch, build_inventory(s.arch), s.plan, costs).step_s;
  const double step = simulate(s, costs, SimOptions{}).result.step_time_s;
  INFO("bound " << bound << " s, replay " << step << " s");
  CHECK(bound <= step);
  CHECK(bound > 0.85 * step);
}

TEST_CASE("Step bound: TP (with and without SP or overlap), CP and expert TP stay below the replay", "[unit][bound]") {
  const std::string moe = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const std::string dense = test::source_path("scenarios/fig8/dense-ddp.json");
  const std::vector<std::pair<std::string, std::vector<std::string>>> plans = {
      {dense, {"design=ddp+tp2", "plan.batch.global_batch_tokens=262144"}},
      {dense, {"design=ddp+tp4+nosp+pp2", "plan.batch.global_batch_tokens=262144"}},
      {dense, {"design=ddp+tp4+tpoverlap", "plan.batch.global_batch_tokens=262144"}},
      {dense, {"design=fsdp+tp2+cp2", "plan.batch.global_batch_tokens=262144"}},
      {dense, {"design=ddp+cp4+ulysses", "plan.batch.global_batch_tokens=262144"}},
      {dense,
       {"design=ddp+tp2+tpoverlap+cp2+pp2", "plan.batch.global_batch_tokens=262144",
        "plan.activations.recompute=full"}},
      {moe, {"design=ddp+tp2+ep4", "plan.batch.global_batch_tokens=262144"}},
      {moe, {"design=ddp+ep4+etp2", "plan.routing.model=zipf", "plan.batch.global_batch_tokens=262144"}},
      {moe, {"design=ddp+tp2+ep2+etp2+pp2", "plan.batch.global_batch_tokens=262144"}},
  };
  for (const auto& [file, sets] : plans) {
    INFO(sets.front());
    check_bound(load_scenario(file, sets));
  }
}

TEST_CASE("TP, CP and expert TP: simulating every rank gives the step of one rank per role", "[unit][bound]") {
  // The collectives of the TP, CP and ETP groups match across the simulated ranks; with every
  // rank simulated they must give the step that one symmetric rank gives.
  const std::string moe = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const std::string dense = test::source_path("scenarios/fig8/dense-ddp.json");
  for (const auto& [file, design] :
       std::vector<std::pair<std::string, std::string>>{{dense, "design=ddp+tp2+tpoverlap+cp2"},
                                                        {dense, "design=ddp+cp2+ulysses"},
                                                        {moe, "design=ddp+tp2+ep2+etp2"}}) {
    INFO(design);
    const Scenario s = load_scenario(file, {design, "plan.batch.global_batch_tokens=262144"});
    const ProfileCostBook costs(s.hardware, s.cost_models);
    SimOptions all;
    all.all_ranks = true;
    CHECK(simulate(s, costs, all).result.step_time_s == Approx(simulate(s, costs, SimOptions{}).result.step_time_s));
  }
}
