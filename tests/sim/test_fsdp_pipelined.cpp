// FSDP2 under a pipeline schedule, as torch.distributed.pipelining runs it (stage.py
// backward_maybe_with_nosync and _post_backward, schedules.py _add_reduce_grad): units gathered
// only where they are not gathered already, gradients accumulated unsharded in the reduce dtype,
// one reduce-scatter per unit after its chunk's last backward, and the memory that keeps.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "models/memory/ledger.hpp"
#include "models/memory/working_terms.hpp"
#include "models/plan/designs/design.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// Figure 8's MoE model on 8 x B300 (BF16 compute, FP32 reduction); 4 microbatches per step at PP 2.
Scenario fig8(const std::string& design) {
  return load_scenario(
      test::source_path("scenarios/fig8/moe-ddp.json"),
      {"design=" + design, "architecture.moe.num_experts=32", "plan.batch.global_batch_tokens=262144"});
}

// Per unit (layer index), the tasks of `rank` in `phase` of `kind`.
std::map<std::int32_t, std::size_t> per_unit(const Simulation& sim, std::uint32_t rank, PhaseTag phase, TaskKind kind) {
  std::map<std::int32_t, std::size_t> out;
  for (const Task& t : sim.step.graph.tasks())
    if (t.rank == rank && t.phase == phase && t.kind == kind) ++out[t.layer];
  return out;
}

std::size_t labelled(const Simulation& sim, std::uint32_t rank, const std::string& label) {
  std::size_t n = 0;
  for (const Task& t : sim.step.graph.tasks()) n += t.rank == rank && label == t.label ? 1 : 0;
  return n;
}

// The first simulated rank of `stage`.
std::uint32_t rank_of_stage(const Simulation& sim, std::int64_t stage) {
  for (std::uint32_t r = 0; r < sim.step.ranks.size(); ++r)
    if (sim.step.ranks[r].stage == stage) return r;
  FAIL("no rank of stage " << stage);
  return 0;
}

}  // namespace

TEST_CASE("FSDP2 without reshard under PP gathers each unit once a step and reduce-scatters it once",
          "[unit][fsdp][pipeline]") {
  const Scenario s = fig8("fsdp+noreshard+pp2");
  REQUIRE(s.plan.pp == 2);
  REQUIRE(batch_shape(s.plan, s.arch).microbatches == 4);
  REQUIRE(design_of(s.plan).accumulates_unsharded(s.plan));
  const Simulation sim = simulate(s);
  for (const std::int64_t stage : {0, 1}) {
    const std::uint32_t r = rank_of_stage(sim, stage);
    const auto gathers = per_unit(sim, r, PhaseTag::fsdp_gather, TaskKind::collective);
    const auto reduces = per_unit(sim, r, PhaseTag::fsdp_reduce, TaskKind::collective);
    REQUIRE(!gathers.empty());
    // Stage 0: the embedding and blocks 0-3; stage 1: blocks 4-7 and the LM head.
    CHECK(gathers.size() == 5);
    for (const auto& [unit, n] : gathers) CHECK(n == 1);
    CHECK(reduces == gathers);
    // The first microbatch's gradient cast into the FP32 accumulator, the three others added in.
    CHECK(labelled(sim, r, "unsharded gradient cast") == 5);
    CHECK(labelled(sim, r, "unsharded gradient accumulate") == 5 * 3);
    CHECK(labelled(sim, r, "wait for the gradient reduce-scatters") == 1);
  }
  // Without the pipeline every microbatch reduce-scatters every unit.
  const Scenario one_stage = fig8("fsdp+noreshard");
  const Simulation flat = simulate(one_stage);
  const auto flat_m = static_cast<std::size_t>(batch_shape(one_stage.plan, one_stage.arch).microbatches);
  for (const auto& [unit, n] : per_unit(flat, 0, PhaseTag::fsdp_reduce, TaskKind::collective)) CHECK(n == flat_m);
  CHECK(labelled(flat, 0, "unsharded gradient cast") == 0);
}

TEST_CASE("FSDP2 full reshard under 1F1B gathers a block for each pass that follows a forward",
          "[unit][fsdp][pipeline]") {
  const Simulation sim = simulate(fig8("fsdp+pp2"));
  // Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3: F0 and F1 gather (F0 resharded its blocks), B0 gathers
  // after F1 and keeps them, F2 finds them gathered (and reshards them), B1 and B2 gather, F3
  // finds them, B3 too: 5 gathers of each block, against 8 without the pipeline. The embedding is
  // resharded after each forward and not gathered for backward: 4.
  const auto first = per_unit(sim, rank_of_stage(sim, 0), PhaseTag::fsdp_gather, TaskKind::collective);
  CHECK(first.at(-1) == 4);
  for (std::int32_t block = 0; block < 4; ++block) CHECK(first.at(block) == 5);
  // Stage 1 runs F0 B0 F1 B1 F2 B2 F3 B3: F0, then each B. The LM head is kept from its first
  // forward (not resharded after forward).
  const auto last = per_unit(sim, rank_of_stage(sim, 1), PhaseTag::fsdp_gather, TaskKind::collective);
  CHECK(last.at(8) == 1);
  for (std::int32_t block = 4; block < 8; ++block) CHECK(last.at(block) == 5);
}

TEST_CASE("FSDP2 under interleaved PP reduces each model chunk after its own last backward", "[unit][fsdp][pipeline]") {
  const Simulation sim = simulate(fig8("fsdp+noreshard+pp2+v2"));
  const std::uint32_t r = rank_of_stage(sim, 0);
  CHECK(labelled(sim, r, "wait for the gradient reduce-scatters") == 2);
  const auto reduces = per_unit(sim, r, PhaseTag::fsdp_reduce, TaskKind::collective);
  CHECK(reduces.size() == 5);  // the embedding, blocks 0-1 and 4-5
  for (const auto& [unit, n] : reduces) CHECK(n == 1);
  // FSDP1 is not an FSDPModule for torch.distributed.pipelining: it reduces every microbatch.
  const Scenario fsdp1 = fig8("fsdp+fsdp1+pp2");
  CHECK_FALSE(design_of(fsdp1.plan).accumulates_unsharded(fsdp1.plan));
  CHECK(labelled(simulate(fsdp1), 0, "unsharded gradient cast") == 0);
}

TEST_CASE("FSDP2 under PP holds the stage's gathered units and FP32 gradient accumulators", "[unit][fsdp][pipeline]") {
  const Scenario s = fig8("fsdp+noreshard+pp2");
  const Inventory inv = build_inventory(s.arch);
  const MemoryLedger ledger = scenario_ledger(s, inv);
  const std::vector<LocalTensor> tensors = stage_tensors(inv, s.arch, s.plan, 0);
  double numel = 0, blocks = 0;
  for (const auto& [unit, n] : view_of(s.arch, s.plan, tensors, 0).unit_numel) {
    numel += n;
    blocks += unit >= 0 && unit < s.arch.num_layers ? n : 0.0;
  }
  REQUIRE(blocks > 0);
  const auto item = [](const PhaseSet& p, const std::string& name) {
    for (const LedgerItem& i : p.items)
      if (i.name == name) return i.bytes;
    return -1.0;
  };
  std::size_t phases = 0;
  for (const PhaseSet& p : ledger.stages[0].phases) {
    if (p.phase != Phase::forward && p.phase != Phase::backward) continue;
    ++phases;
    CHECK(item(p, "gathered units (kept across microbatches under the pipeline)") == Approx(numel * 2));
    CHECK(item(p, "unsharded gradient accumulators") == Approx(numel * 4));
  }
  CHECK(phases == 2);
  // The allocation replay keeps them too: above the persistent state, its high-water mark holds
  // at least every block gathered (BF16) and its accumulator (FP32).
  const StageLedger& stage = ledger.stages[0];
  CHECK(stage.peak_reserved - stage.persistent_bytes >= 6 * blocks);
}

TEST_CASE("FSDP2 without reshard under PP moves its units once per step: compare treats it as DDP",
          "[unit][fsdp][pipeline]") {
  // moesim compare looks for the batch where a design that syncs once per step overtakes one that
  // syncs every microbatch; the entry answers for the composed plan.
  const auto every_microbatch = [](const std::string& design) {
    const Scenario s = fig8(design);
    return design_of(s.plan).syncs_every_microbatch(s.plan);
  };
  CHECK_FALSE(every_microbatch("fsdp+noreshard+pp2"));  // gathered once, reduced once
  CHECK(every_microbatch("fsdp+pp2"));                  // gathered again before each backward after a forward
  CHECK(every_microbatch("fsdp+noreshard"));            // reduce-scattered every microbatch
  CHECK(every_microbatch("fsdp+fsdp1+pp2"));
  CHECK(every_microbatch("zero2"));
  CHECK_FALSE(every_microbatch("ddp+pp2"));
}
