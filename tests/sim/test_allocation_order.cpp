// The allocator replay over a stage's allocation order (sim/allocation_order.hpp): the
// loss's op sequence, agreement with the ledger's allocated peak, the lazily made optimizer
// state, expandable segments, pipelines, and the fixed-fraction alternative.
#include <catch2/catch.hpp>

#include "models/common/units.hpp"
#include "models/memory/activations.hpp"
#include "sim/allocation_order.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("the upcast cross-entropy holds 10 V bytes per token in its forward and 12 V in its backward", "[unit]") {
  // Figure 8 model: d = 4096, V = 100,352, BF16. Forward: the final-norm output 2d, BF16 logits
  // 2V, the FP32 upcast 4V and log-probabilities 4V; the upcast and the logits are then freed.
  // Backward: nll_loss's FP32 gradient and log_softmax's FP32 gradient beside the log-probs.
  const Scenario s = test::fig8("ddp", 32);
  const double d = 4096, v = 100352;
  const LossBuffers standard = loss_per_token(s.arch, s.plan);
  CHECK(standard.forward == 2 * d + 10 * v);
  CHECK(standard.backward == 2 * d + 12 * v);
  Scenario fused = s;
  fused.plan.loss = LossImpl::fused;
  const LossBuffers f = loss_per_token(fused.arch, fused.plan);
  CHECK(f.forward == 2 * d);
  CHECK(f.backward == 4 * d);
}

TEST_CASE("the replay's step tensors peak where the ledger's working set does", "[unit]") {
  // Olmo-core DDP makes every persistent tensor before the first step, so the replay's own peak is
  // the ledger's working peak.
  for (const int n : {8, 48}) {
    INFO("N = " << n);
    const test::StageReplay r = test::replay_stage0(test::fig8("ddp", n));
    CHECK(r.replay.working_allocated == Approx(r.ledger.peak_allocated - r.ledger.persistent_bytes).epsilon(1e-3));
    CHECK(r.replay.kept_from_start == Approx(r.ledger.persistent_bytes).epsilon(1e-9));
    CHECK(r.replay.working_reserved >= r.replay.working_allocated);
    CHECK(r.replay.working_required >= r.replay.working_allocated);
    CHECK(r.replay.persistent_rounding >= 0);
    CHECK(r.replay.persistent_rounding < 0.01 * r.ledger.persistent_bytes);
  }
}

TEST_CASE("torch optimizers make their states at the first step, so the second step meets them", "[unit]") {
  // The same plan with Olmo-core's optimizer (states made up front) and torch's foreach AdamW
  // (zeros_like at the first step): the states move from the state kept from the start to the
  // step's own tensors, alive at the second step's peak.
  Scenario eager = test::fig8("ddp", 48);
  Scenario lazy = eager;
  lazy.plan.optimizer.kernels = OptimizerKernels::foreach;
  const test::StageReplay e = test::replay_stage0(eager), l = test::replay_stage0(lazy);
  double states = 0;
  for (const LedgerItem& i : e.ledger.persistent)
    if (i.cls == MemClass::optimizer_states) states += i.bytes;
  REQUIRE(states > 0);
  CHECK(l.replay.kept_from_start == Approx(e.replay.kept_from_start - states).epsilon(1e-9));
  CHECK(l.replay.working_allocated >= e.replay.working_allocated + 0.999 * states);
}

TEST_CASE("torchtitan's Llama 3.1 8B FSDP: expandable segments reserve no more than fixed ones", "[unit]") {
  // On a 96 GB H100, where the step fits without releasing cached segments.
  const Scenario on = load_scenario(test::source_path("scenarios/h100-llama3.1-8b-fsdp8-op-sac.json"),
                                    {"hardware.memory.usable_capacity_GiB.value=89.4"});
  REQUIRE(on.plan.allocator.expandable_segments);
  Scenario off = on;
  off.plan.allocator.expandable_segments = false;
  const auto a = test::run_ledger(on), b = test::run_ledger(off);
  const StageLedger &x = a.ledger.stages[0], &y = b.ledger.stages[0];
  CHECK(x.peak_allocated == y.peak_allocated);
  CHECK(x.peak_reserved <= y.peak_reserved);
  CHECK(x.allocator_basis.find("expandable segments") != std::string::npos);
}

TEST_CASE("an interleaved pipeline stage replays its own pass order", "[unit]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                   {"plan.nodes=4", "design=ddp+ep8+pp4+v2", "architecture.moe.num_experts=32"});
  const MemoryLedger ledger = scenario_ledger(s, build_inventory(s.arch));
  REQUIRE(ledger.stages.size() == 4);
  for (const StageLedger& st : ledger.stages) {
    INFO("stage " << st.stage);
    CHECK(st.peak_reserved >= st.peak_allocated);
    CHECK(st.reserved_required >= st.peak_allocated);
    CHECK(st.allocator_basis.find("PyTorch caching allocator replayed over") == 0);
  }
  // The same numbers again (no hidden state between replays).
  const MemoryLedger again = scenario_ledger(s, build_inventory(s.arch));
  for (std::size_t i = 0; i < 4; ++i) CHECK(again.stages[i].allocator_basis == ledger.stages[i].allocator_basis);
}

TEST_CASE("the fixed-fraction rule divides the allocated peak by (1 - fragmentation)", "[unit]") {
  Scenario s = test::fig8("ddp-ep8", 32);
  s.plan.allocator.model = AllocatorModel::fixed_fraction;
  const StageLedger st = test::run_ledger(s).ledger.stages[0];
  const double f = s.hardware.memory.fragmentation_fraction.value;
  CHECK(st.peak_reserved == Approx(st.peak_allocated / (1 - f)));
  CHECK(st.reserved_required == st.peak_reserved);
  CHECK(st.device_total == Approx(st.peak_reserved + st.runtime_reserves));
  CHECK(st.headroom == Approx(st.capacity - st.device_total));
}
