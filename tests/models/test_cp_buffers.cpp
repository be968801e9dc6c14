// Context parallelism's buffers around each attention core (models/memory/
// context_parallel_buffers.cpp, after Transformer Engine's CP attention), by hand on the
// Llama-3-70B-like model under TP 8: 8 query heads and 1 KV head of 128 per rank.
#include <catch2/catch.hpp>

#include "models/memory/working_terms.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario llama70b(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"plan.nodes=16", "plan.batch.global_batch_tokens=4194304"};
  all.insert(all.end(), sets.begin(), sets.end());
  return load_scenario(test::source_path("scenarios/h100-llama3-70b-like-tp8-pp4.json"), all);
}

double item_bytes(const PhaseSet& phase, MemClass cls) {
  double sum = 0;
  for (const auto& item : phase.items)
    if (item.cls == cls) sum += item.bytes;
  return sum;
}

}  // namespace

TEST_CASE("CP ring buffers: every step's K/V and partial output forward, two K/V and dK/dV and dQ backward",
          "[golden]") {
  const Scenario s = llama70b({"design=ddp+tp8+cp4+pp4+v5"});
  REQUIRE(s.plan.cp == 4);
  const double T = 8192.0 / 4;  // the rank's quarter of one sequence
  // Per token on a rank: K and V 1 x 128 each; the output 8 x 128; q 8 x 128; 8 FP32 log-sum-exps.
  const double kv = 256, out = 1024, q = 1024, lse = 8 * 4;
  const LedgerItem fwd = context_parallel_buffers(s.arch, s.plan, 0, T, false);
  CHECK(fwd.cls == MemClass::cp_comm_buffers);
  CHECK(fwd.bytes == Approx(4 * T * (2 * kv + 2 * out + lse)));
  CHECK(context_parallel_buffers(s.arch, s.plan, 0, T, true).bytes == Approx(T * 2 * (4 * kv + q)));
  // Ulysses (TP 2, so that CP divides the rank's 32 query and 4 KV heads): the exchanged q, k, v
  // beside the rank's own, 32 x 128 and 2 x 4 x 128 values per token.
  const Scenario a2a = llama70b({"design=ddp+tp2+cp4+ulysses+pp4+v5"});
  CHECK(context_parallel_buffers(a2a.arch, a2a.plan, 0, T, false).bytes == Approx(T * 2 * (4096 + 1024)));
  CHECK(context_parallel_buffers(a2a.arch, a2a.plan, 0, T, true).bytes == Approx(T * 2 * (4096 + 1024)));
  // None without CP, or outside the blocks.
  const Scenario plain = llama70b({});
  CHECK(context_parallel_buffers(plain.arch, plain.plan, 0, 8192, false).bytes == 0);
  CHECK(context_parallel_buffers(s.arch, s.plan, s.arch.num_layers, T, false).bytes == 0);
}

TEST_CASE("CP ring buffers appear in the ledger's forward and in the allocator replay", "[unit]") {
  // Without a pipeline, so the replay's own peak is the ledger's working peak (Olmo-core DDP makes
  // every persistent tensor before the first step).
  const Scenario s = llama70b({"design=ddp+tp8+cp4", "plan.batch.global_batch_tokens=1048576"});
  const test::StageReplay r = test::replay_stage0(s);
  const double T = 8192.0 / 4;
  const double fwd = context_parallel_buffers(s.arch, s.plan, 0, T, false).bytes;
  CHECK(item_bytes(r.ledger.phases.at(0), MemClass::cp_comm_buffers) == Approx(fwd));
  // The backward's worst moment here is the LM head's (its weight gradient), which runs no attention.
  CHECK(item_bytes(r.ledger.phases.at(1), MemClass::cp_comm_buffers) == 0);
  CHECK(r.replay.working_allocated == Approx(r.ledger.peak_allocated - r.ledger.persistent_bytes).epsilon(1e-3));
}
