// What tensor and sequence parallelism do to a block's saved activations and to the rank's
// weights, on the Figure 8 dense model (d = 4096, 32 query and 8 KV heads of 128 with QK-norm,
// dense MLP hidden 20480), per token, BF16. Korthikanti et al. 2022 (Section 4, Table 2): with
// TP alone the activations between the TP regions (the norms' inputs and outputs: 4d bytes per
// token here, their "10 sbh" with dropout masks) stay whole and the rest divides by t; with
// sequence parallelism everything divides by t ("34/t").
#include <catch2/catch.hpp>

#include "models/memory/activations.hpp"
#include "models/plan/rank_layout.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
Scenario dense_tp(std::int64_t tp, bool sp, Recompute recompute = Recompute::none) {
  Scenario s = load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {});
  s.plan.tp = tp;
  s.plan.sequence_parallel = sp;
  s.plan.recompute = recompute;
  return s;
}
}  // namespace

TEST_CASE("TP golden: saved activations divide by t under SP, all but the norms' without", "[golden]") {
  const Scenario one = dense_tp(1, true);
  REQUIRE_FALSE(one.arch.is_moe_layer(0));
  const BlockActivations whole = saved_per_token(one.arch, 0, one.plan, {});
  // Hand-computed (test_saved_activations_formats.cpp): attention 2 x 8192 + 10240 + 20480 + 128
  // = 47232; MLP 16384 + 81920 + 40960 = 139264.
  REQUIRE(whole.attention == 47232.0);
  REQUIRE(whole.mlp == 139264.0);
  for (const std::int64_t t : {2, 4, 8}) {
    const Scenario sp = dense_tp(t, true);
    const BlockActivations a = saved_per_token(sp.arch, 0, sp.plan, {});
    CHECK(a.attention == Approx(whole.attention / dbl(t)).epsilon(1e-12));
    CHECK(a.mlp == Approx(whole.mlp / dbl(t)).epsilon(1e-12));
    const Scenario nosp = dense_tp(t, false);
    const BlockActivations b = saved_per_token(nosp.arch, 0, nosp.plan, {});
    // The norms' inputs and outputs: 2d in attention, 2d in the MLP, 2 bytes each.
    const double outside = 2 * 2 * 4096.0;
    CHECK(b.attention == Approx(outside + (whole.attention - outside) / dbl(t)).epsilon(1e-12));
    CHECK(b.mlp == Approx(outside + (whole.mlp - outside) / dbl(t)).epsilon(1e-12));
  }
  // Selective recompute (the SwiGLU product recomputed) and full recompute (the block input,
  // kept as the rank's sequence shard under SP) divide the same way.
  const Scenario sel = dense_tp(4, true, Recompute::selective);
  const Scenario sel1 = dense_tp(1, true, Recompute::selective);
  CHECK(saved_per_token(sel.arch, 0, sel.plan, {}).total() ==
        Approx(saved_per_token(sel1.arch, 0, sel1.plan, {}).total() / 4).epsilon(1e-12));
  const Scenario full = dense_tp(4, true, Recompute::full);
  CHECK(saved_per_token(full.arch, 0, full.plan, {}).total() == 4096.0 * 2 / 4);
  const Scenario full_nosp = dense_tp(4, false, Recompute::full);
  CHECK(saved_per_token(full_nosp.arch, 0, full_nosp.plan, {}).total() == 4096.0 * 2);
}

TEST_CASE("TP: the logits are vocab-parallel and the weights split but the norms", "[golden]") {
  const Scenario one = dense_tp(1, true), four = dense_tp(4, true);
  // The loss buffers of TP 4 are those of a quarter of the vocabulary on one rank.
  Architecture quarter = one.arch;
  quarter.vocab_size /= 4;
  CHECK(loss_per_token(four.arch, four.plan).backward == loss_per_token(quarter, one.plan).backward);
  CHECK(loss_per_token(four.arch, four.plan).forward == loss_per_token(quarter, one.plan).forward);
  const Inventory inv = build_inventory(one.arch);
  double whole = 0, split = 0, norms = 0;
  for (const LocalTensor& lt : stage_tensors(inv, one.arch, one.plan, 0)) whole += lt.local_numel;
  for (const LocalTensor& lt : stage_tensors(inv, four.arch, four.plan, 0)) {
    split += lt.local_numel;
    if (lt.tensor->cls == TensorClass::norm) norms += lt.local_numel;
  }
  CHECK(split == Approx(norms + (whole - norms) / 4).epsilon(1e-12));
}
