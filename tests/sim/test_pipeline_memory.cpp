// Working memory as the schedule holds it: interleaved pipeline chunks charged for their own
// layers, dropless versus capacity-capped routed rows, EP buffers per implementation.
#include <catch2/catch.hpp>

#include "models/memory/activations.hpp"
#include "models/memory/ledger.hpp"
#include "models/moe/routing.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

const LedgerItem& item(const PhaseSet& p, const std::string& name) {
  for (const auto& i : p.items)
    if (i.name == name) return i;
  FAIL("no item " << name);
  return p.items.front();
}

// Per-token saved bytes of the Figure 8 blocks (d 4096, 32 heads of 128, 8 KV heads, QK-norm,
// BF16), counted by hand as in test_ledger_fig8.cpp.
constexpr double kAttention = 8192 + 8192 + 10240 + 12288 + 8192 + 128;
constexpr double kDenseMlp = 8192 + 8192 + 4 * 20480 + 2 * 20480;
// MoE (N = 32, K = 4): norm in/out, router logits 4N, K(4 + 8) top-K; with symmetric EP buffers
// the dispatched input holds 1.25 x K rows; up/gate, SwiGLU product and expert output follow the
// K routed rows; the shared expert 4h_s + 2h_s.
constexpr double kMoeMlpSymmetric =
    8192 + 8192 + 4 * 32 + 4 * 12 + 1.25 * 4 * 8192 + 4 * (16384 + 8192 + 8192) + (16384 + 8192);
constexpr double kTokens = 16384;

}  // namespace

TEST_CASE("Interleaved PP4 v=2: each stage holds its chunks' passes, each charged for its own layers", "[unit]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                   {"plan.nodes=4", "design=ddp+ep8+pp4+v2", "architecture.moe.num_experts=32"});
  REQUIRE(s.plan.ep_transport == EpTransport::symmetric_memory);
  const MemoryLedger ledger = scenario_ledger(s, build_inventory(s.arch));
  REQUIRE(ledger.stages.size() == 4);
  // Eight one-layer virtual stages: stage 0 runs layer 0 (dense, chunk 0) and layer 4 (chunk 1);
  // stage 3 runs layers 3 and 7. Warm-up 2(P-1-s) + (v-1)P forwards, then one more.
  const StageLedger& first = ledger.stages[0];
  CHECK(first.in_flight_chunks == std::vector<std::int64_t>{7, 4});
  CHECK(first.in_flight_microbatches == 5.5);
  const double first_bytes = kTokens * (7 * (kAttention + kDenseMlp) + 4 * (kAttention + kMoeMlpSymmetric));
  CHECK(item(first.phases[0], "saved activations").bytes == Approx(first_bytes).epsilon(1e-12));
  const StageLedger& last = ledger.stages[3];
  CHECK(last.in_flight_chunks == std::vector<std::int64_t>{4, 1});
  CHECK(item(last.phases[0], "saved activations").bytes ==
        Approx(kTokens * 5 * (kAttention + kMoeMlpSymmetric)).epsilon(1e-12));
  // Before: passes rounded up to whole microbatches of every layer, ceil(11 / 2) = 6 x both.
  CHECK(first_bytes < kTokens * 6 * (2 * kAttention + kDenseMlp + kMoeMlpSymmetric));
  // simulate charges what the replay held, the same here.
  const StepResult r = simulate(s).result;
  CHECK(r.in_flight[0] == first.in_flight_chunks);
  CHECK(r.ledger.stages[0].peak_allocated == first.peak_allocated);
}

TEST_CASE("Dropless routing sizes routed rows by the load, capacity-capped routing by the capacity", "[unit]") {
  Scenario s = test::fig8("ddp", 48);
  s.plan.routing.capacity_factor = 1.5;
  // Dropless (the default): the capacity factor pads nothing.
  CHECK(routed_rows_per_token(s.arch, s.plan, 1.0).computed == 4);
  CHECK(routed_rows_per_token(s.arch, s.plan, 1.1).computed == Approx(4.4));
  s.plan.routing.dropless = false;
  CHECK(routed_rows_per_token(s.arch, s.plan, 1.1).computed == 6);  // K x cf, padded
  const double capped = test::run_ledger(s).ledger.stages[0].peak_allocated;
  s.plan.routing.dropless = true;
  CHECK(test::run_ledger(s).ledger.stages[0].peak_allocated < capped);

  // Uniform routing loads every rank evenly; skewed routing loads the first shard most.
  RoutingSpec spec;
  CHECK(peak_rank_load_factor(spec, 64, 4, 16384, 8, {1, 2, 3}) == 1.0);
  spec.kind = RoutingKind::zipf;
  const double skew = peak_rank_load_factor(spec, 64, 4, 16384, 8, {1, 2, 3});
  CHECK(skew > 1.5);
  CHECK(skew < 8.0);
  CHECK(peak_rank_load_factor(spec, 64, 4, 16384, 1, {1}) == Approx(1.0));  // one rank holds all experts
}

TEST_CASE("EP buffers per implementation: per-layer NCCL staging or per-block symmetric buffers", "[unit]") {
  Scenario s = test::fig8("ddp-ep8", 32);
  const RoutedRows sym = routed_rows_per_token(s.arch, s.plan, 1.0);
  CHECK(sym.dispatch == 5);  // 1.25 x K capacity rows
  CHECK(sym.computed == 4);
  const StageLedger a = test::run_ledger(s).ledger.stages[0];
  // Seven MoE blocks (layer 0 is dense), each with a capacity-sized combine buffer, in every phase.
  const double combine = 7 * kTokens * 5 * 4096 * 2;
  for (const auto& ph : a.phases) CHECK(item(ph, "EP symmetric combine buffers").bytes == combine);

  s.plan.ep_buffers_shared = true;
  CHECK(item(test::run_ledger(s).ledger.stages[0].phases[0], "EP symmetric combine buffers").bytes == combine / 7);

  s.plan.ep_transport = EpTransport::nccl_all_to_all;
  const StageLedger b = test::run_ledger(s).ledger.stages[0];
  // Send K x T rows and receive the rank's K x T routed rows while one layer runs.
  CHECK(item(b.phases[0], "EP all-to-all staging").bytes == kTokens * (4 + 4) * 4096 * 2);
  for (const auto& i : b.phases[2].items) CHECK(i.cls != MemClass::ep_comm_buffers);  // none left at grad sync
}

TEST_CASE("layer_places gives every layer the place place_of_layer gives it", "[unit]") {
  for (const std::vector<std::string>& sets :
       std::vector<std::vector<std::string>>{{},
                                             {"plan.nodes=4", "design=ddp+ep8+pp4+v2"},
                                             {"plan.nodes=2", "design=ddp+ep8+pp2"},
                                             {"plan.nodes=2", "design=ddp+ep8+pp2", "plan.pipeline.layer_split=[5,3]"},
                                             {"plan.nodes=4", "design=fsdp+pp4+v2", "architecture.num_layers=11"}}) {
    const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), sets);
    const auto places = layer_places(s.plan, s.arch);
    REQUIRE(places.size() == static_cast<std::size_t>(s.arch.num_layers + 2));
    for (std::int64_t l = -1; l <= s.arch.num_layers; ++l) {
      INFO("layer " << l);
      CHECK(places[static_cast<std::size_t>(l + 1)].stage == place_of_layer(s.plan, s.arch, l).stage);
      CHECK(places[static_cast<std::size_t>(l + 1)].chunk == place_of_layer(s.plan, s.arch, l).chunk);
    }
  }
}

TEST_CASE("A GPT-style block saves what Korthikanti et al. 2022 count, with flash attention and no dropout", "[unit]") {
  // Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", Sec. 4.1
  // with selective recomputation (the attention core recomputed, as flash attention does): per
  // token and layer the attention block saves its layer-norm input (2h), the QKV input (2h), Q
  // and K (4h), V (2h) and the projection input (2h) = 12h bytes, plus a one-byte dropout mask
  // that a dropout-free model does not have. Flash attention also keeps its FP32 log-sum-exp
  // per head.
  Scenario s = test::fig8("ddp", 48);
  s.arch.attention.num_kv_heads = s.arch.attention.num_heads;  // multi-head, as in the paper
  s.arch.attention.qk_norm = false;
  const double h = static_cast<double>(s.arch.d_model);
  const RoutedRows rows = routed_rows_per_token(s.arch, s.plan, 1.0);
  const BlockActivations dense = saved_per_token(s.arch, 0, s.plan, rows);
  CHECK(dense.attention == 12 * h + 4 * s.arch.attention.num_heads);
  // The MLP: the paper's layer-norm input (2h) and first-linear input (2h); for SwiGLU with a
  // fused activation (silu recomputed in its backward, as Megatron-LM's bias_swiglu and
  // Transformer Engine do) the gate and up projections (2 x 2f) and their product (2f), where
  // the paper's GeLU MLP keeps 8h + 8h for its 4h-wide activation input and output.
  const double f = static_cast<double>(s.arch.dense_hidden);
  CHECK(dense.mlp == 2 * h + 2 * h + 4 * f + 2 * f);
  // Selective recompute (moesim's: the SwiGLU product recomputed) drops the 2f product.
  s.plan.recompute = Recompute::selective;
  CHECK(saved_per_token(s.arch, 0, s.plan, rows).mlp == 2 * h + 2 * h + 4 * f);
}
