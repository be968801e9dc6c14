// The paged stash's copies in the step (sim/paged_stash_copies.hpp): each MoE layer's saved
// expert tensors copied into the stash after its grouped MLP and back before its backward, at
// the HBM copy rate, by hand; the next grouped MLP waits for the copy, the backward for its
// reload; a forward's last MoE layer whose backward follows keeps its tensors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// Qwen3-30B-A3B (d 2048, 48 MoE layers of 128 experts of hidden 768, top-8) on EP 8 over HybridEP,
// recompute none, the sync-free budget and the paged stash.
Scenario qwen3(const std::vector<std::string>& more = {}) {
  std::vector<std::string> sets{"plan.expert_parallel.transport=\"hybridep\"", "plan.activations.recompute=\"none\"",
                                "plan.expert_parallel.rank_capacity_factor=1.5"};
  sets.insert(sets.end(), more.begin(), more.end());
  return test::gallery("qwen3-30b-a3b", sets);
}

constexpr double kK = 8, kD = 2048, kH = 768, kBf16 = 2, kLayers = 48;

}  // namespace

TEST_CASE("The paged stash copies each MoE layer's expert tensors out and back at the copy rate", "[unit]") {
  const Scenario sc = qwen3({"plan.activations.moe_paged_stash=true"});
  const Simulation sim = simulate(sc);
  const TaskGraph& g = sim.step.graph;
  const double T = dbl(batch_shape(sc.plan, sc.arch).microbatch_tokens);
  const double m = dbl(sim.step.microbatches);
  REQUIRE(sim.step.ranks.size() == 1);  // one stage, even routing
  // A copy reads and writes the rows' saved bytes: the dispatched input (d), fc1's output (2h)
  // and the SwiGLU product (h), BF16, for the rank's K x T routed rows.
  const double bytes = 2 * kK * T * (kD + 3 * kH) * kBf16;
  const ProfileCostBook costs(sc.hardware, sc.cost_models);
  std::vector<TaskId> copies, reloads, experts;
  for (TaskId id = 0; id < g.size(); ++id) {
    const Task& t = g.task(id);
    if (t.stream == StreamKind::stash) {
      CHECK(t.phase == PhaseTag::paged_stash);
      CHECK(t.work_s == Approx(costs.memory(bytes, MemoryKernel::copy)));
      (std::string(t.label) == "copy into paged stash" ? copies : reloads).push_back(id);
    }
    if (t.microbatch == 0 && t.layer <= 1 && std::string(t.label).rfind("routed experts", 0) == 0)
      experts.push_back(id);
  }
  // Every layer of every microbatch but the last one of each forward (its backward runs next with
  // pipeline degree 1): stashed once, reloaded once.
  CHECK(dbl(copies.size()) == m * (kLayers - 1));
  CHECK(reloads.size() == copies.size());
  // Microbatch 0: layer 0's copy, then layer 1's grouped MLP after it; layer 0's reload before
  // its grouped MLP backward.
  const auto find = [&](const std::vector<TaskId>& ids, std::int32_t layer, bool backward) {
    for (const TaskId id : ids) {
      const Task& t = g.task(id);
      if (t.microbatch == 0 && t.layer == layer && (t.phase == PhaseTag::backward) == backward) return id;
    }
    FAIL("no such task");
    return kNoTask;
  };
  const auto in_mb0 = [&](const std::vector<TaskId>& ids, std::int32_t layer) {
    for (const TaskId id : ids)
      if (g.task(id).microbatch == 0 && g.task(id).layer == layer) return id;
    FAIL("no such copy");
    return kNoTask;
  };
  const ReplayResult& r = sim.replay;
  CHECK(r.start[find(experts, 1, false)] >= r.finish[in_mb0(copies, 0)]);
  CHECK(r.start[find(experts, 0, true)] >= r.finish[in_mb0(reloads, 0)]);
  CHECK(r.start[in_mb0(copies, 0)] >= r.finish[find(experts, 0, false)]);
  // The step pays for them: busy time on the stash stream, some of it exposed.
  const StepResult plain = simulate(qwen3()).result;
  CHECK(sim.result.exposed_s[static_cast<std::size_t>(PhaseTag::paged_stash)] > 0);
  CHECK(sim.result.step_time_s > plain.step_time_s);
  CHECK(plain.exposed_s[static_cast<std::size_t>(PhaseTag::paged_stash)] == 0);
}

TEST_CASE("The paged stash spills a layer that no longer fits its CUDA pages to its host pages", "[unit]") {
  // Even routing, CUDA pages for half the balanced rows and host pages for all of them: each
  // forward's first 24 MoE layers fit the CUDA pages, the next 23 go to the host (the 48th is kept).
  const Scenario sc =
      qwen3({"plan.activations.moe_paged_stash=true", "plan.activations.moe_paged_stash_cuda_factor=0.5",
             "plan.activations.moe_paged_stash_cpu_factor=1"});
  const Simulation sim = simulate(sc);
  CHECK(sim.result.rerun.empty());  // 1x the balanced rows fit 0.5x + 1x
  const double T = dbl(batch_shape(sc.plan, sc.arch).microbatch_tokens), m = dbl(sim.step.microbatches);
  const double bytes = kK * T * (kD + 3 * kH) * kBf16;
  const ProfileCostBook costs(sc.hardware, sc.cost_models);
  double gpu_out = 0, host_out = 0, gpu_back = 0, host_back = 0;
  for (TaskId id = 0; id < sim.step.graph.size(); ++id) {
    const Task& t = sim.step.graph.task(id);
    if (t.stream != StreamKind::stash) continue;
    const std::string label = t.label;
    const bool to_host = label.find("host pages") != std::string::npos;
    // The host pages over the host link, one way; the CUDA pages read and written in HBM.
    CHECK(t.work_s == Approx(to_host ? costs.host_copy_s(bytes) : costs.memory(2 * bytes, MemoryKernel::copy)));
    if (to_host) CHECK(t.layer >= 24);
    (label.rfind("copy", 0) == 0 ? (to_host ? host_out : gpu_out) : (to_host ? host_back : gpu_back)) += 1;
  }
  CHECK(gpu_out == m * 24);
  CHECK(host_out == m * 23);
  CHECK((gpu_back == gpu_out && host_back == host_out));
  // Without host pages the same stash overflows, and the step reruns.
  CHECK_FALSE(
      simulate(qwen3({"plan.activations.moe_paged_stash=true", "plan.activations.moe_paged_stash_cuda_factor=0.5"}))
          .result.rerun.empty());
}
