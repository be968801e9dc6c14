// A block as one ordered list of ops (models/costs/layer_ops.hpp): the dense and MoE lists, the
// EP points between which the routed experts sit, the side-stream shared experts, and the
// segments the step builder and the bound read, which hold every op's time once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kMoe = "scenarios/fig8/moe-ddp-ep8.json";
const std::string kDense = "scenarios/fig8/dense-ddp.json";

PassTimes total(const LayerOps& l) {
  PassTimes t;
  for (const auto& op : l.ops) t = add(t, op.times);
  return t;
}

std::vector<double> even_rows(const Architecture& a, const ParallelPlan& plan, double tokens) {
  const auto local = static_cast<std::size_t>(a.moe->num_experts / plan.ep);
  return std::vector<double>(local, tokens * a.moe->top_k / static_cast<double>(a.moe->num_experts));
}
}  // namespace

TEST_CASE("a dense block is attention then its MLP, with no communication point", "[unit]") {
  const Scenario s = load_scenario(test::source_path(kDense), {});
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const LayerOps l = layer_ops(s.arch, s.plan, costs, 0, 16384, {});
  CHECK_FALSE(l.moe);
  CHECK(test::kinds(l) == std::vector<LayerOpKind>{LayerOpKind::attention_elementwise, LayerOpKind::qkv_projection,
                                                   LayerOpKind::attention_core, LayerOpKind::output_projection,
                                                   LayerOpKind::dense_mlp});
  for (const auto& op : l.ops) {
    INFO(name_of(op.kind));
    CHECK(op.place == OpPlace::main);
    CHECK(op.times.fwd > 0);
    CHECK(op.times.bwd >= op.times.wgrad);
  }
  const LayerWork w = segments(l);
  CHECK(w.pre.fwd == Approx(total(l).fwd).epsilon(1e-12));
  CHECK(w.pre.bwd == Approx(total(l).bwd).epsilon(1e-12));
  CHECK(w.experts.fwd == 0);
  CHECK(w.shared.fwd == 0);
}

TEST_CASE("an MoE block puts the routed experts between the EP dispatch and combine points", "[unit]") {
  const Scenario s = load_scenario(test::source_path(kMoe), {});
  REQUIRE(s.arch.moe);
  const ProfileCostBook costs(s.hardware, s.cost_models);
  std::int64_t layer = 0;
  while (!s.arch.is_moe_layer(layer)) ++layer;
  const double tokens = 16384;
  const LayerOps l = layer_ops(s.arch, s.plan, costs, layer, tokens, even_rows(s.arch, s.plan, tokens));
  REQUIRE(l.moe);
  const auto k = test::kinds(l);
  const auto at = [&](LayerOpKind x) { return std::find(k.begin(), k.end(), x) - k.begin(); };
  CHECK(at(LayerOpKind::router) < at(LayerOpKind::permute));
  CHECK(at(LayerOpKind::permute) < at(LayerOpKind::ep_dispatch));
  CHECK(at(LayerOpKind::ep_dispatch) + 1 == at(LayerOpKind::routed_experts));
  CHECK(at(LayerOpKind::routed_experts) + 1 == at(LayerOpKind::ep_combine));
  CHECK(at(LayerOpKind::ep_combine) < at(LayerOpKind::unpermute));
  CHECK(std::count(k.begin(), k.end(), LayerOpKind::shared_expert) == s.arch.moe->shared_experts);
  for (const auto& op : l.ops) {
    INFO(name_of(op.kind));
    CHECK((op.place == OpPlace::point) == (op.kind == LayerOpKind::ep_dispatch || op.kind == LayerOpKind::ep_combine));
    CHECK((op.place == OpPlace::side) == (op.kind == LayerOpKind::shared_expert));
    if (op.place == OpPlace::point) CHECK(op.times.fwd == 0);
  }
  // Every op's time lands in exactly one segment.
  const LayerWork w = segments(l);
  const PassTimes sum = add(add(add(w.pre, w.experts), w.post), w.shared);
  CHECK(sum.fwd == Approx(total(l).fwd).epsilon(1e-12));
  CHECK(sum.bwd == Approx(total(l).bwd).epsilon(1e-12));
  CHECK(sum.wgrad == Approx(total(l).wgrad).epsilon(1e-12));
  CHECK(w.experts.fwd == l.ops[static_cast<std::size_t>(at(LayerOpKind::routed_experts))].times.fwd);
  CHECK(w.a2a_bytes == Approx(tokens * s.arch.moe->top_k * s.arch.d_model * 2));
}

TEST_CASE("an FP8 dispatch adds a forward-only cast before the EP dispatch point", "[unit]") {
  const Scenario bf16 = load_scenario(test::source_path(kMoe), {});
  const Scenario s = load_scenario(test::source_path(kMoe), {"hardware=../../hardware_profiles/b200-hgx.json",
                                                             "plan.precision.linears.routed_expert=\"mxfp8\"",
                                                             "plan.precision.ep_dispatch=\"mxfp8\""});
  const ProfileCostBook costs(s.hardware, s.cost_models);
  std::int64_t layer = 0;
  while (!s.arch.is_moe_layer(layer)) ++layer;
  const LayerOps l = layer_ops(s.arch, s.plan, costs, layer, 16384, even_rows(s.arch, s.plan, 16384));
  const auto k = test::kinds(l);
  const auto cast = std::find(k.begin(), k.end(), LayerOpKind::dispatch_cast);
  REQUIRE(cast != k.end());
  CHECK(*(cast + 1) == LayerOpKind::ep_dispatch);
  const LayerOp& op = l.ops[static_cast<std::size_t>(cast - k.begin())];
  CHECK(op.times.fwd > 0);
  CHECK(op.times.bwd == 0);
  CHECK(l.dispatch_bytes < l.a2a_bytes);
  const ProfileCostBook bf16_costs(bf16.hardware, bf16.cost_models);
  const auto b =
      test::kinds(layer_ops(bf16.arch, bf16.plan, bf16_costs, layer, 16384, even_rows(bf16.arch, bf16.plan, 16384)));
  CHECK(std::find(b.begin(), b.end(), LayerOpKind::dispatch_cast) == b.end());
}

TEST_CASE("every op kind has its own name", "[unit]") {
  const auto all = kLayerOpKindNames.names();
  const std::set<std::string> names(all.begin(), all.end());
  CHECK(names.size() == all.size());
  CHECK(kLayerOpKindNames.parse("routed_experts") == LayerOpKind::routed_experts);
}
