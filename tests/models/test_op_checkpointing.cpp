// torchtitan's op-level selective activation checkpointing (plan.activations.recompute =
// "selective_op"): what a dense block keeps, what its backward rebuilds and recomputes, and the
// bundled torchtitan Llama 3.1 8B FSDP scenario, term by term.
#include <catch2/catch.hpp>

#include "models/common/units.hpp"
#include "models/costs/layer_work.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/memory/activations.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Contains;

namespace {
const std::string kTorchtitan = "scenarios/h100-llama3.1-8b-fsdp8-op-sac.json";

Scenario torchtitan(const std::string& recompute) {
  return load_scenario(test::source_path(kTorchtitan), {"plan.activations.recompute=" + recompute});
}
}  // namespace

TEST_CASE("selective_op keeps the block input, the attention op's outputs and every odd matmul", "[unit]") {
  const Scenario s = torchtitan("selective_op");
  const RoutedRows none;
  const BlockActivations b = saved_per_token(s.arch, 0, s.plan, none);
  // Llama 3.1 8B, BF16: d = q = 4096, kv = 1024, 32 heads, h = 14336. Matmuls in call order:
  // wq (1, kept), wk (2), wv (3, kept), wo (4); w1 (5, kept), w3 (6), w2 (7, kept).
  // Attention: input 2d + wq 2q + wv 2kv + attention output 2q + FP32 LSE 4 x heads.
  CHECK(b.attention == 8192 + 8192 + 2048 + 8192 + 128);
  // MLP: w1 2h + w2 2d.
  CHECK(b.mlp == 28672 + 8192);
  // Without checkpointing the block keeps 36,992 (attention) + 102,400 (MLP) bytes per token;
  // the backward rebuilds the difference.
  const Scenario plain = torchtitan("none");
  CHECK(saved_per_token(plain.arch, 0, plain.plan, none).total() == 36992 + 102400);
  CHECK(recomputed_per_token(s.arch, 0, s.plan, none) == 36992 + 102400 - (26752 + 36864));
  // Full recompute keeps only the block input and rebuilds everything.
  const Scenario full = torchtitan("full");
  CHECK(saved_per_token(full.arch, 0, full.plan, none).total() == 8192);
  CHECK(recomputed_per_token(full.arch, 0, full.plan, none) == 36992 + 102400);
  CHECK(recomputed_per_token(plain.arch, 0, plain.plan, none) == 0);
}

TEST_CASE("The torchtitan 8B record: 32 blocks x 16,384 tokens of op-checkpointed activations", "[golden]") {
  const auto r = test::run_ledger(torchtitan("selective_op"));
  const StageLedger& st = r.ledger.stages.at(0);
  // 32 x 63,616 B x 16,384 tokens = 31.06 GiB, one microbatch in flight.
  CHECK(st.activation_bytes == Approx(32.0 * 63616 * 16384));
  CHECK(st.activation_bytes / kGiB == Approx(31.06).epsilon(1e-3));
  CHECK(st.peak_phase == Phase::backward);
  // FSDP2 persistent state: (4 + 4 + 8) B per parameter over 8 ranks.
  CHECK(st.persistent_bytes / r.inventory.params_total == Approx(2.0).epsilon(1e-3));
}

TEST_CASE("selective_op sits between no recompute and full recompute in time", "[unit]") {
  const double none = simulate(torchtitan("none")).result.step_time_s;
  const double op = simulate(torchtitan("selective_op")).result.step_time_s;
  const double full = simulate(torchtitan("full")).result.step_time_s;
  CHECK(none < op);
  CHECK(op < full);
  // The recompute priced for a block is the forward of wk, wo and w3 plus the memory-bound
  // kernels: less than the block's whole forward, more than its w3 GEMM alone.
  const Scenario s = torchtitan("selective_op");
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const LayerWork w = layer_work(s.arch, s.plan, costs, 0, 16384, {});
  CHECK(w.partial_recompute > 0);
  CHECK(w.partial_recompute < w.pre.fwd);
  CHECK(w.partial_recompute > linear(costs, {}, 16384, 4096, 14336).fwd);
}

TEST_CASE("selective_op on an MoE architecture is refused at activations.recompute", "[unit]") {
  try {
    load_scenario(test::source_path("scenarios/fig8/moe-ddp.json"), {"plan.activations.recompute=selective_op"});
    FAIL("loaded without an error");
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK_THAT(e.path(), Contains("activations.recompute"));
    CHECK_THAT(e.message(), Contains("GQA attention + gated MLP blocks only"));
    CHECK_THAT(e.message(), Contains("allowed here: none, full, selective"));
  }
}
