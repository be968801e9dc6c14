// Tensor (and sequence) parallelism worked out by hand on a 2-layer dense model with round-number
// costs (every GEMM 1 ms, every collective 3 ms, memory-bound kernels and attention free), and
// the rank groups of a TP x PP x DP layout listed rank by rank.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "models/common/errors.hpp"
#include "models/plan/design_spec.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/engine.hpp"
#include "sim/step_builder.hpp"
#include "sim/timeline_metrics.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// 2 layers, d = 64, 16-token sequences, one sequence per microbatch: each TP collective of
// activations moves [16, 64] BF16 = 2048 bytes; the vocab-parallel loss's three all-reduces
// one FP32 per token, 64 bytes each.
// The tiny model on `gpus` GPUs of one node under DDP, with `parallel` ({key: object}) added to
// its plan; `sets` as --set would apply them.
nlohmann::json tiny_document(std::int64_t gpus, const nlohmann::json& parallel, std::int64_t heads = 4,
                             std::int64_t kv_heads = 4) {
  nlohmann::json plan = {{"design", "ddp"},
                         {"nodes", 1},
                         {"gpus_per_node", gpus},
                         {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 32}}}};
  plan.update(parallel);
  return {{"architecture", test::tiny_dense_architecture(heads, kv_heads)},
          {"plan", plan},
          {"hardware", read_json_file(test::source_path("hardware_profiles/b300-hgx.json"))}};
}

Scenario load_tiny(const nlohmann::json& doc, const std::vector<std::string>& sets = {}) {
  test::TempDir dir;
  return load_scenario(dir.write("tiny.json", doc.dump()), sets);
}

Scenario tiny_tp(std::int64_t tp, bool sp, std::int64_t heads, std::int64_t kv_heads) {
  return load_tiny(
      tiny_document(tp, {{"tensor_parallel", {{"degree", tp}, {"sequence_parallel", sp}}}}, heads, kv_heads));
}

struct TpCounts {
  std::map<std::pair<PhaseTag, CollectiveKind>, int> by_kind;  // PhaseTag: forward or backward pass
  std::set<double> bytes;
  int total = 0;
};

// The TP-stream collectives of the built step, by the compute phase of the microbatch pass they
// sit in (forward before the first backward kernel of that microbatch) and kind.
TpCounts tp_collectives(const BuiltStep& step, std::int32_t microbatch) {
  TpCounts out;
  bool backward = false;
  for (TaskId id = 0; id < step.graph.size(); ++id) {
    const Task& t = step.graph.task(id);
    if (t.microbatch != microbatch) continue;
    if (t.stream == StreamKind::compute && t.phase == PhaseTag::backward) backward = true;
    if (t.stream != StreamKind::comm_tp) continue;
    ++out.total;
    ++out.by_kind[{backward ? PhaseTag::backward : PhaseTag::forward, t.coll}];
    out.bytes.insert(t.link_bytes[static_cast<std::size_t>(LinkClass::nvlink)]);
  }
  return out;
}

int count(const TpCounts& c, PhaseTag pass, CollectiveKind kind) {
  const auto it = c.by_kind.find({pass, kind});
  return it == c.by_kind.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("TP golden: sequence parallelism gathers and scatters around each TP region", "[golden]") {
  // TP 2 on 2 GPUs: DP 1, m = 32 / 16 = 2 microbatches. Forward of one microbatch: embedding
  // (free) then its reduce-scatter 3; per layer all-gather 3, QKV + out-projection 2, reduce-
  // scatter 3, all-gather 3, MLP up/gate + down 2, reduce-scatter 3 = 16, two layers 32; LM head:
  // all-gather 3, head GEMM 1, the loss's three all-reduces 9 = 13. Forward 48 ms.
  // Backward: head dgrad + wgrad 2, its reduce-scatter 3; per layer all-gather 3, MLP 4,
  // reduce-scatter 3, all-gather 3, attention 4, reduce-scatter 3 = 20, two layers 40; the
  // embedding's all-gather 3. Backward 48 ms. Two microbatches: 192 ms; DP 1 syncs nothing.
  const Scenario s = tiny_tp(2, true, 4, 4);
  REQUIRE(s.plan.tp == 2);
  REQUIRE(s.plan.sequence_parallel);
  REQUIRE(s.plan.dp() == 1);
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  CHECK(step.microbatches == 2);
  const TpCounts c = tp_collectives(step, 0);
  CHECK(count(c, PhaseTag::forward, CollectiveKind::all_gather) == 5);      // 2 per layer + the head's
  CHECK(count(c, PhaseTag::forward, CollectiveKind::reduce_scatter) == 5);  // 2 per layer + the embedding's
  CHECK(count(c, PhaseTag::forward, CollectiveKind::all_reduce) == 3);      // the vocab-parallel loss
  CHECK(count(c, PhaseTag::backward, CollectiveKind::all_gather) == 5);
  CHECK(count(c, PhaseTag::backward, CollectiveKind::reduce_scatter) == 5);
  CHECK(count(c, PhaseTag::backward, CollectiveKind::all_reduce) == 0);
  CHECK(c.bytes == std::set<double>{64.0, 2048.0});
  const ReplayResult r = replay(step.graph, *fair_share(0));
  CHECK(r.makespan == Approx(0.192));
  const TimelineMetrics m = measure(step.graph, r);
  // 2 x (10 + 3 + 10) collectives of 3 ms
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::tp_comm)] == Approx(0.138));
}

TEST_CASE("TP golden: without sequence parallelism one all-reduce closes each region", "[golden]") {
  // Forward: embedding all-reduce 3; per layer attention 2, all-reduce 3, MLP 2, all-reduce 3 =
  // 10, two layers 20; head 1 and the loss's all-reduces 9. Forward 33 ms. Backward: head 2, its
  // input gradient's all-reduce 3; per layer MLP 4, all-reduce 3, attention 4, all-reduce 3 = 14,
  // two layers 28; the embedding none. Backward 33 ms. Two microbatches: 132 ms.
  const Scenario s = tiny_tp(2, false, 4, 4);
  REQUIRE_FALSE(s.plan.sequence_parallel);
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  const TpCounts c = tp_collectives(step, 1);
  CHECK(count(c, PhaseTag::forward, CollectiveKind::all_reduce) == 8);
  CHECK(count(c, PhaseTag::backward, CollectiveKind::all_reduce) == 5);
  CHECK(c.total == 13);
  const ReplayResult r = replay(step.graph, *fair_share(0));
  CHECK(r.makespan == Approx(0.132));
}

TEST_CASE("TP golden: TP 8 over 2 KV heads keeps the same collectives per layer", "[golden]") {
  // 8 heads, 2 KV groups: each rank holds one head and one (replicated) KV group. The
  // collectives do not depend on the degree: the same count and bytes as TP 2.
  for (const bool sp : {true, false}) {
    const Scenario s = tiny_tp(8, sp, 8, 2);
    const Inventory inv = build_inventory(s.arch);
    const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
    const TpCounts c = tp_collectives(step, 0);
    CHECK(c.total == (s.plan.sequence_parallel ? 23 : 13));
    CHECK(c.bytes == std::set<double>{64.0, 2048.0});
    // The K and V projections hold one of the two KV groups (1/2), the rest 1/8.
    for (const LocalTensor& lt : stage_tensors(inv, s.arch, s.plan, 0)) {
      const std::string& n = lt.tensor->name;
      const bool kv = n.size() > 4 && (n.substr(n.size() - 4) == ".w_k" || n.substr(n.size() - 4) == ".w_v");
      if (lt.tensor->cls == TensorClass::norm)
        CHECK(lt.tp_share == 1.0);
      else
        CHECK(lt.tp_share == (kv ? 0.5 : 0.125));
    }
  }
}

TEST_CASE("TP x PP x DP on 64 GPUs: every group's ranks", "[golden]") {
  // TP 4 innermost, then DP 8, PP 2 outermost (Megatron-LM's order): 32 ranks per stage.
  ParallelPlan p;
  p.nodes = p.gpus_per_node = 8;
  p.tp = 4;
  p.pp = 2;
  REQUIRE(p.dp() == 8);
  std::map<std::tuple<Communicator, std::int64_t, std::int64_t>, std::vector<std::int64_t>> groups;
  for (std::int64_t r = 0; r < p.world(); ++r) {
    const RankCoords c = coords_of(p, r);
    for (Communicator k : {Communicator::tp, Communicator::dp, Communicator::pp_neighbours})
      groups[{k, c.stage, communicator_instance(p, c, k)}].push_back(r);
  }
  const auto group = [&](Communicator k, std::int64_t stage, std::int64_t instance) {
    return groups.at({k, stage, instance});
  };
  // 16 TP groups of 4 consecutive ranks.
  for (std::int64_t s = 0; s < 2; ++s) {
    for (std::int64_t i = 0; i < 8; ++i) {
      const std::int64_t first = 32 * s + 4 * i;
      CHECK(group(Communicator::tp, s, i) == std::vector<std::int64_t>{first, first + 1, first + 2, first + 3});
    }
  }
  // 8 DP groups: the ranks of a stage with the same TP index, 4 apart.
  for (std::int64_t s = 0; s < 2; ++s) {
    for (std::int64_t t = 0; t < 4; ++t) {
      std::vector<std::int64_t> want;
      for (std::int64_t d = 0; d < 8; ++d) want.push_back(32 * s + 4 * d + t);
      CHECK(group(Communicator::dp, s, t) == want);
    }
  }
  // Pipeline neighbours: rank r of stage 0 and rank r + 32 of stage 1 share their index.
  for (std::int64_t r = 0; r < 32; ++r) {
    CHECK(group(Communicator::pp_neighbours, 0, r) == std::vector<std::int64_t>{r});
    CHECK(group(Communicator::pp_neighbours, 1, r) == std::vector<std::int64_t>{r + 32});
  }
  CHECK(groups.size() == 16 + 8 + 64);
  // Shapes: a TP group inside one HGX host, a DP group of 8 spread over 4 hosts (2 per host).
  CHECK(communicator_shape(p, Communicator::tp).ranks == 4);
  CHECK(communicator_shape(p, Communicator::tp).ranks_per_node == 4);
  CHECK(communicator_shape(p, Communicator::dp).ranks == 8);
  CHECK(communicator_shape(p, Communicator::dp).ranks_per_node == 2);
}

TEST_CASE("TP: the design notation round-trips and bad degrees name their key", "[unit]") {
  const std::string dense = test::source_path("scenarios/fig8/dense-ddp.json");
  const std::string moe = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const Scenario s = load_scenario(dense, {"design=ddp+tp4+nosp+pp2"});
  CHECK(s.plan.tp == 4);
  CHECK_FALSE(s.plan.sequence_parallel);
  CHECK(s.plan.pp == 2);
  CHECK(design_name(s.plan) == "ddp+tp4+nosp+pp2");
  // A spec resets what it does not name: TP back to 1 when a TP plan is given "ddp".
  CHECK(load_scenario(dense, {"plan.tensor_parallel.degree=2", "design=ddp"}).plan.tp == 1);
  const auto error = [](const std::string& file, const std::vector<std::string>& sets) -> std::string {
    try {
      load_scenario(file, sets);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  // 32 heads: TP 3 divides neither them nor the world of 8.
  CHECK_THAT(error(dense, {"plan.nodes=3", "design=ddp+tp3"}),
             Catch::Contains("plan.tensor_parallel.degree") && Catch::Contains("32 attention heads"));
  CHECK_THAT(error(dense, {"design=ddp+tp16"}), Catch::Contains("not divisible by PP x TP"));
  CHECK_THAT(error(moe, {"design=ddp+tp2+nosp+ep8"}), Catch::Contains("plan.tensor_parallel.sequence_parallel") &&
                                                          Catch::Contains("needs sequence parallelism"));
  CHECK_THAT(error(moe, {"design=ddp+tp2+ep16", "plan.nodes=1"}), Catch::Contains("8 ranks of a pipeline stage"));
  CHECK_THAT(error(dense, {"plan.tensor_parallel.degree=0"}), Catch::Contains("plan.tensor_parallel.degree"));
}

namespace {
Scenario tiny_cp(const std::string& variant) {
  return load_tiny(tiny_document(2, {{"context_parallel", {{"degree", 2}, {"variant", variant}}}}));
}

std::vector<const Task*> on_stream(const BuiltStep& step, StreamKind stream, std::int32_t microbatch) {
  std::vector<const Task*> out;
  for (TaskId id = 0; id < step.graph.size(); ++id) {
    const Task& t = step.graph.task(id);
    if (t.stream == stream && t.microbatch == microbatch) out.push_back(&t);
  }
  return out;
}
}  // namespace

TEST_CASE("CP golden: a ring's K/V passes run beside the attention", "[golden]") {
  // CP 2 on 2 GPUs: each rank holds 8 of the 16 tokens of each sequence; the 2 ranks hold the same
  // weights, so the gradient sync spans both (DP x CP = 2); m = 32 / (8 x 2) = 2. Attention 1 ms
  // each way, every GEMM 1 ms, collectives 3 ms. Per layer forward: QKV 1, then the one ring pass
  // (3) beside the attention (1), then out-projection and MLP 3 = 7; two layers 14, head 1:
  // forward 15. Backward: head 2; per layer out-projection and MLP 6, the ring's backward pass 3
  // beside the attention's backward 1, QKV 2 = 11, two layers 22: backward 24. Two microbatches
  // 78 ms, then the DDP step's bucket all-reduce, loss, grad norm and weight rebuild, 3 ms each: 90.
  const Scenario s = tiny_cp("ring");
  REQUIRE(s.plan.dp() == 2);
  test::FakeCosts costs;
  costs.attention_s = 1e-3;
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, costs, SimOptions{});
  CHECK(step.microbatches == 2);
  const auto passes = on_stream(step, StreamKind::comm_cp, 0);
  REQUIRE(passes.size() == 4);  // one pass per layer, forward and backward
  // Each pass moves the rank's K and V chunk, 8 tokens x (64 + 64) x 2 bytes; backward also their
  // gradients.
  CHECK(passes[0]->coll == CollectiveKind::send_recv);
  CHECK(passes[0]->link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] == 2048.0);
  CHECK(passes[3]->link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] == 4096.0);
  const ReplayResult r = replay(step.graph, *fair_share(0));
  CHECK(r.makespan == Approx(0.090));
  const TimelineMetrics m = measure(step.graph, r);
  CHECK(m.ranks[0].exposed[static_cast<std::size_t>(PhaseTag::cp_comm)] == Approx(0.016));  // 2 ms x 8 passes
}

TEST_CASE("CP golden: the all-to-all variant exchanges q, k, v and the output around the attention", "[golden]") {
  // Per layer forward: QKV 1, all-to-all 3, attention 1, all-to-all 3, out-projection and MLP 3 =
  // 11; two layers 22, head 1: 23. Backward: head 2; per layer 6 + 3 + 1 + 3 + 2 = 15, two layers
  // 30: 32. Two microbatches 110 ms, the step's end 12: 122.
  const Scenario s = tiny_cp("all_to_all");
  test::FakeCosts costs;
  costs.attention_s = 1e-3;
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, costs, SimOptions{});
  const auto a2a = on_stream(step, StreamKind::comm_cp, 1);
  REQUIRE(a2a.size() == 8);
  for (const Task* t : a2a) CHECK(t->coll == CollectiveKind::all_to_all);
  // q, k, v of the rank's 8 tokens: 8 x (64 + 2 x 64) x 2 bytes; the output 8 x 64 x 2.
  CHECK(a2a[0]->link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] == 3072.0);
  CHECK(a2a[1]->link_bytes[static_cast<std::size_t>(LinkClass::nvlink)] == 1024.0);
  CHECK(replay(step.graph, *fair_share(0)).makespan == Approx(0.122));
  CHECK(design_name(s.plan) == "ddp+cp2+ulysses");
}

TEST_CASE("TP communication overlap runs each gather and scatter beside its GEMM", "[golden]") {
  // The same collectives as without overlap (23 per microbatch under SP), now beside the GEMMs:
  // the step is shorter than the 192 ms of the blocking golden and no shorter than the TP
  // stream's own busy time (46 collectives of 3 ms, one stream in issue order).
  const nlohmann::json doc = tiny_document(2, {{"tensor_parallel", {{"degree", 2}, {"comm_overlap", true}}}});
  const Scenario s = load_tiny(doc);
  REQUIRE(s.plan.tp_comm_overlap);
  CHECK(design_name(s.plan) == "ddp+tp2+tpoverlap");
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  CHECK(tp_collectives(step, 0).total == 23);
  const ReplayResult r = replay(step.graph, *fair_share(0));
  CHECK(r.makespan < 0.192 - 1e-9);
  CHECK(r.makespan >= 0.138 - 1e-9);
  // Overlap needs sequence parallelism (Megatron-LM's rule).
  CHECK_THROWS_WITH(load_tiny(doc, {"plan.tensor_parallel.sequence_parallel=false"}),
                    Catch::Contains("plan.tensor_parallel.comm_overlap"));
}

TEST_CASE("ETP golden: the routed rows are gathered over the expert-TP group and scattered back", "[golden]") {
  // The Figure 8 MoE (8 experts, top 4) with EP 4 x expert TP 2 on 8 GPUs: each MoE layer's
  // experts pass, forward and backward, runs dispatch all-to-all, the rows' all-gather over the 2
  // ETP ranks, the expert GEMMs, their reduce-scatter and the combine all-to-all. Uniform routing:
  // a rank sends its T x K routed copies; its expert group computes on the rows of the EP x ETP
  // group's tokens for its experts, ETP x T x K of them, gathered.
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                   {"architecture.moe.num_experts=8", "design=ddp+ep4+etp2"});
  REQUIRE(s.plan.etp == 2);
  REQUIRE(s.plan.ep_dp() == 1);
  CHECK(design_name(s.plan) == "ddp+ep4+etp2");
  const Inventory inv = build_inventory(s.arch);
  const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
  const double T = dbl(batch_shape(s.plan, s.arch).microbatch_tokens), K = dbl(s.arch.moe->top_k);
  const double row = dbl(s.arch.d_model) * 2;  // BF16
  std::int64_t moe_layers = 0;
  for (std::int64_t l = 0; l < s.arch.num_layers; ++l) moe_layers += s.arch.is_moe_layer(l) ? 1 : 0;
  std::map<CollectiveKind, int> kinds;
  std::set<double> a2a_bytes, etp_bytes;
  for (const Task* t : on_stream(step, StreamKind::comm_ep, 0)) {
    ++kinds[t->coll];
    const double b = t->link_bytes[static_cast<std::size_t>(LinkClass::nvlink)];
    (t->coll == CollectiveKind::all_to_all ? a2a_bytes : etp_bytes).insert(b);
  }
  CHECK(kinds[CollectiveKind::all_to_all] == 4 * moe_layers);  // dispatch and combine, both ways
  CHECK(kinds[CollectiveKind::all_gather] == 2 * moe_layers);
  CHECK(kinds[CollectiveKind::reduce_scatter] == 2 * moe_layers);
  CHECK(a2a_bytes == std::set<double>{T * K * row});
  CHECK(etp_bytes == std::set<double>{2 * T * K * row});
  // Each rank holds 1/(EP x ETP) of every stacked expert tensor.
  for (const LocalTensor& lt : stage_tensors(inv, s.arch, s.plan, 0)) {
    if (lt.tensor->cls == TensorClass::routed_expert) CHECK(lt.local_numel == dbl(lt.tensor->numel) / 8);
  }
}

TEST_CASE("TP golden: a whole-projection QK-norm sends q and k to sequence shards and back", "[golden]") {
  // Olmo-core's Attention.apply_tp: w_q and w_k hand over Shard(1), the norm runs on the rank's
  // tokens, its output returns to Shard(2): per layer two all-to-alls of the rank's q and k
  // (2 of 4 heads of 16: [16, 32 + 32] BF16 = 2048 bytes) forward and two backward, 3 ms each:
  // 8 per microbatch, 48 ms over the two. A per-head norm (Qwen3, Megatron-Core) moves nothing.
  for (const char* scope : {"projection", "head"}) {
    INFO(scope);
    nlohmann::json doc = tiny_document(2, {{"tensor_parallel", {{"degree", 2}, {"sequence_parallel", true}}}});
    doc["architecture"]["attention"]["qk_norm"] = true;
    doc["architecture"]["attention"]["qk_norm_scope"] = scope;
    const Scenario s = load_tiny(doc);
    const bool whole = std::string(scope) == "projection";
    const Inventory inv = build_inventory(s.arch);
    const BuiltStep step = build_step(s.arch, inv, s.plan, test::FakeCosts{}, SimOptions{});
    const TpCounts c = tp_collectives(step, 0);
    CHECK(count(c, PhaseTag::forward, CollectiveKind::all_to_all) == (whole ? 4 : 0));
    CHECK(count(c, PhaseTag::backward, CollectiveKind::all_to_all) == (whole ? 4 : 0));
    CHECK(count(c, PhaseTag::forward, CollectiveKind::all_gather) == 5);  // the regions' as before
    CHECK(c.bytes == std::set<double>{64.0, 2048.0});
    CHECK(replay(step.graph, *fair_share(0)).makespan == Approx(whole ? 0.240 : 0.192));
    // The norms' weights: the whole q and k widths (64 each), or one head's (16) each.
    double norm_numel = 0;
    for (const auto& t : inv.tensors)
      if (t.name.find("q_norm") != std::string::npos || t.name.find("k_norm") != std::string::npos)
        norm_numel += dbl(t.numel);
    CHECK(norm_numel == (whole ? 2 * 2 * 64.0 : 2 * 2 * 16.0));  // two layers
  }
  // The scope belongs to a QK-norm.
  nlohmann::json doc = tiny_document(1, nlohmann::json::object());
  doc["architecture"]["attention"]["qk_norm_scope"] = "head";
  CHECK_THROWS_WITH(load_tiny(doc), Catch::Contains("attention.qk_norm_scope: only used with \"qk_norm\": true"));
}
