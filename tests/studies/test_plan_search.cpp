// `moesim plan`'s search: pruning by memory and by the step-time bound loses nothing (the same
// top K and family bests as replaying every candidate), the answer does not depend on the
// thread count, the counts add up, and bad requests are refused with the flag and what is allowed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "models/common/errors.hpp"
#include "models/input/scenario.hpp"
#include "reports/plan_report.hpp"
#include "studies/plan_search.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// The Figure 8 MoE on one node with 8 experts and a 256Ki-token batch: a space of a few hundred
// candidates, small enough to replay every one of them.
ScenarioSource small_source() {
  return read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                       {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144"});
}

PlanRequest small_request() {
  PlanRequest q;
  q.gpus = 8;
  q.search = {"microbatch=1,2", "recompute=none,full", "schedule=1f1b,v2"};
  return q;
}

PlanSearchResult search(const ScenarioSource& source, const PlanRequest& q, PlanObjective objective, int jobs) {
  const PlanSpace space = plan_space(source, compose(source), q);
  PlanSearchOptions o;
  o.objective = objective;
  o.top_k = 4;
  o.jobs = jobs;
  return search_plans(source, space, o);
}

}  // namespace

TEST_CASE("Plan search: pruning loses nothing against replaying every candidate", "[unit][plan]") {
  const ScenarioSource source = small_source();
  for (const PlanObjective objective : {PlanObjective::tokens_per_s, PlanObjective::mfu}) {
    const PlanSearchResult r = search(source, small_request(), objective, 2);
    // Four places; plans of equal score share one.
    REQUIRE(r.top.size() >= 4);
    CHECK(*r.records[r.top.back()].rank == 4);
    CHECK(r.counts.replayed < r.records.size());  // something was pruned
    // Exhaustive: replay every candidate the rules let through and rank the fitting ones.
    struct Scored {
      double score;
      std::size_t candidate;
      std::string family;
    };
    std::vector<Scored> all;
    for (const PlanRecord& rec : r.records) {
      const SweepPoint p = run_point(source, candidate_changes(r.candidates[rec.candidate]), rec.candidate);
      REQUIRE(p.ok);
      if (p.result->ledger.oom) continue;
      const double score = objective == PlanObjective::mfu ? p.result->mfu : p.result->tokens_per_s_per_gpu;
      all.push_back({score, rec.candidate, r.candidates[rec.candidate].family});
    }
    std::sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) {
      return a.score != b.score ? a.score > b.score : a.candidate < b.candidate;
    });
    for (std::size_t k = 0; k < r.top.size(); ++k) {
      INFO("entry " << k + 1);
      CHECK(r.records[r.top[k]].candidate == all[k].candidate);
      CHECK(r.records[r.top[k]].score == all[k].score);
    }
    // The fourth place holds every plan of its score.
    if (all.size() > r.top.size()) CHECK(all[r.top.size()].score != all[r.top.size() - 1].score);
    for (const auto& f : r.families) {
      const auto best = std::find_if(all.begin(), all.end(), [&](const Scored& s) { return s.family == f.family; });
      INFO("family " << f.family);
      REQUIRE(f.record.has_value() == (best != all.end()));
      if (f.record) CHECK(r.records[*f.record].candidate == best->candidate);
    }
  }
}

TEST_CASE("Plan search: the same document at any thread count, and counts that add up", "[unit][plan]") {
  const ScenarioSource source = small_source();
  const PlanSearchResult one = search(source, small_request(), PlanObjective::tokens_per_s, 1);
  const PlanSearchResult three = search(source, small_request(), PlanObjective::tokens_per_s, 3);
  CHECK(plan_json("x", one).dump() == plan_json("x", three).dump());
  const PlanCounts& n = one.counts;
  CHECK(n.enumerated == n.refused_by_rule + n.pruned_by_memory + n.pruned_by_bound + n.replayed);
  std::size_t refused = 0;
  for (const auto& [reason, count] : one.refusals) refused += count;
  CHECK(refused == n.refused_by_rule);
  CHECK_FALSE(plan_listing(plan_json("x", one)).empty());
}

TEST_CASE("Plan search: the memory-headroom objective ranks by the ledger's headroom", "[unit][plan]") {
  const PlanSearchResult r = search(small_source(), small_request(), PlanObjective::memory_headroom, 2);
  REQUIRE(r.top.size() == 4);
  double best_headroom = -1e300;
  for (const auto& rec : r.records)
    if (rec.fits) best_headroom = std::max(best_headroom, rec.headroom_GiB);
  CHECK(r.records[r.top[0]].headroom_GiB == Approx(best_headroom));
}

TEST_CASE("Plan search: bad requests name the flag and what is allowed", "[unit][plan]") {
  const ScenarioSource source = small_source();
  const Scenario base = compose(source);
  const auto message = [&](PlanRequest q) {
    try {
      plan_space(source, base, q);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  PlanRequest q = small_request();
  q.search = {"desing=ddp"};
  CHECK_THAT(message(q), Catch::Contains("--search") && Catch::Contains("did you mean 'design'"));
  q.search = {"design=dpp"};
  CHECK_THAT(message(q), Catch::Contains("did you mean 'ddp'") && Catch::Contains("ddp-nodistopt"));
  q.search = {"schedule=v1"};
  CHECK_THAT(message(q), Catch::Contains("vN"));
  q.search = {"ep=0"};
  CHECK_THAT(message(q), Catch::Contains("integers >= 1"));
  q.search = {"plan.activations.recompute=sometimes"};
  CHECK_THAT(message(q), Catch::Contains("recompute"));
  q.search = {};
  q.gpus = 12;
  CHECK_THAT(message(q), Catch::Contains("--gpus") && Catch::Contains("multiple of the GPUs per node"));
  CHECK_THROWS_AS(parse_objective("speed"), InputError);
}

TEST_CASE("moesim plan: exit 0 with a document, exit 2 on a bad axis or no possible plan, exit 3 when nothing fits",
          "[unit][plan][cli]") {
  const test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const std::string small = " --set architecture.moe.num_experts=8 --set plan.batch.global_batch_tokens=262144 ";
  CHECK(test::run_cli("plan " + scenario + " --gpus 8" + small + "--search pp=1 --json " + dir.path("p.json")) == 0);
  CHECK(test::run_cli("plan " + scenario + " --gpus 8" + small + "--search nope=1 --json " + dir.path("q.json")) == 2);
  CHECK_FALSE(std::filesystem::exists(dir.path("q.json")));
  // One GPU cannot hold the 18.7B-parameter model in any plan.
  CHECK(test::run_cli("plan " + scenario + " --gpus 1 --global-batch 16Ki --json " + dir.path("oom.json")) == 3);
  const nlohmann::json oom = nlohmann::json::parse(std::ifstream(dir.path("oom.json")));
  CHECK(oom.at("counts").at("pruned_by_memory").get<int>() > 0);
  CHECK(oom.at("counts").at("replayed") == 0);
  CHECK(oom.at("top").empty());
  // A search no plan of the GPU count can meet (PP 3 does not divide 8) is bad input: exit 2, no file.
  CHECK(test::run_cli("plan " + scenario + " --gpus 8" + small + "--search pp=3 --json " + dir.path("none.json")) == 2);
  CHECK_FALSE(std::filesystem::exists(dir.path("none.json")));
}

TEST_CASE("Plan search: the balanced split axis adds pipelined plans with their chosen split", "[unit][plan]") {
  PlanRequest q = small_request();
  q.search.push_back("split=even,balanced");
  q.search.push_back("pp=2,4");
  const PlanSearchResult r = search(small_source(), q, PlanObjective::tokens_per_s, 2);
  std::size_t balanced = 0;
  for (const auto& c : r.candidates) {
    if (!c.balanced_split || !c.values.contains("layer_split")) continue;
    ++balanced;
    std::int64_t layers = 0;
    for (const auto& n : c.values.at("layer_split")) layers += n.get<std::int64_t>();
    CHECK(layers == 8);  // the Figure 8 model's layers
  }
  CHECK(balanced > 0);
}

TEST_CASE("Plan search: the precision axis searches the MXFP8 recipe and refuses it without the profile's rates",
          "[unit][plan]") {
  PlanRequest q = small_request();
  q.search.push_back("precision=bf16,mxfp8");
  const PlanSearchResult r = search(small_source(), q, PlanObjective::tokens_per_s, 2);
  REQUIRE_FALSE(r.top.empty());
  CHECK(r.candidates[r.records[r.top.front()].candidate].values.at("precision") == "mxfp8");
  const ScenarioSource h100 = read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                            {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144",
                                             "hardware=" + test::source_path("hardware_profiles/h100-hgx.json")});
  const PlanSearchResult refused = search(h100, q, PlanObjective::tokens_per_s, 2);
  CHECK(refused.refusals.count("the hardware profile has no mxfp8 GEMM rates") == 1);
}

TEST_CASE("Plan search: the expert-TP axis shards the routed experts and refuses what does not divide",
          "[unit][plan]") {
  PlanRequest q = small_request();
  q.search = {"design=ddp", "microbatch=2", "recompute=none", "pp=1", "ep=1,2,4", "etp=1,2,3,4"};
  const PlanSearchResult r = search(small_source(), q, PlanObjective::tokens_per_s, 2);
  std::set<std::string> designs;
  for (const PlanRecord& rec : r.records) {
    designs.insert(rec.design);
    const nlohmann::json& v = r.candidates[rec.candidate].values;
    CHECK(v.value("etp", 1) * v.at("ep").get<std::int64_t>() <= 8);
  }
  CHECK(designs.count("ddp+ep2+etp2") == 1);
  CHECK(designs.count("ddp+etp4") == 1);
  CHECK(designs.count("ddp+ep4+etp2") == 1);
  // ETP 3 with each EP, and EP 4 x ETP 4, do not divide the 8 ranks: 4 choices x 3 layouts.
  CHECK(r.refusals.at("EP degree x expert TP does not divide the ranks of a stage (TP x DP)") == 12);
  // The architecture's rule: expert TP 8 divides the ranks but not an expert hidden size of 4100.
  const ScenarioSource odd = read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                                           {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144",
                                            "architecture.moe.expert_hidden=4100"});
  PlanRequest o = q;
  o.search = {"design=ddp", "microbatch=2", "recompute=none", "pp=1", "ep=1", "etp=4,8", "layout=per_tensor"};
  const PlanSearchResult hidden = search(odd, o, PlanObjective::tokens_per_s, 2);
  CHECK(hidden.refusals.at("expert TP 8 does not divide the expert hidden size 4100") == 1);
  CHECK(hidden.records.size() == 1);
  // The FSDP designs' own rule, asked of the design entry before composing.
  PlanRequest f = q;
  f.search = {"design=fsdp", "microbatch=2", "recompute=none", "pp=1", "ep=1,2", "etp=1,2"};
  const PlanSearchResult fsdp = search(small_source(), f, PlanObjective::tokens_per_s, 2);
  CHECK(fsdp.refusals.at("expert TP is modelled for the DDP and ZeRO-2 designs") == 2);
  // The default axis keeps the base plan's expert TP and writes nothing.
  const PlanSearchResult plain = search(small_source(), small_request(), PlanObjective::tokens_per_s, 2);
  for (const PlanCandidate& c : plain.candidates) {
    CHECK_FALSE(c.values.contains("etp"));
    for (const PlanSet& set : c.sets) CHECK(set.key != &plan_key::etp_degree);
  }
  // A dense model collapses the axis.
  const ScenarioSource dense =
      read_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {"plan.batch.global_batch_tokens=262144"});
  PlanRequest d = q;
  d.search = {"design=ddp", "microbatch=2", "recompute=none", "pp=1", "etp=1,2"};
  const PlanSearchResult collapsed = search(dense, d, PlanObjective::tokens_per_s, 2);
  for (const PlanCandidate& c : collapsed.candidates) CHECK_FALSE(c.values.contains("etp"));
}

TEST_CASE("Plan search: the V-shape and zero-bubble schedules by axis word or by scenario path", "[unit][plan]") {
  const ScenarioSource source = small_source();
  const auto designs = [&](const std::vector<std::string>& axes) {
    PlanRequest q = small_request();
    q.search = axes;
    const PlanSearchResult r = search(source, q, PlanObjective::tokens_per_s, 2);
    CHECK(!r.top.empty());
    std::vector<std::string> out;
    for (const PlanRecord& rec : r.records) out.push_back(rec.design);
    return out;
  };
  const auto count = [](const std::vector<std::string>& all, const std::string& part) {
    return std::count_if(all.begin(), all.end(),
                         [&](const std::string& d) { return d.find(part) != std::string::npos; });
  };
  const auto named = designs({"pp=2", "microbatch=2", "recompute=none", "schedule=1f1b_v,zb_h1,zbv"});
  CHECK(count(named, "+pp2+1f1b_v") > 0);
  CHECK(count(named, "+pp2+zb_h1") > 0);
  CHECK(count(named, "+pp2+zbv") > 0);
  // The path axis overrides the schedule the axis word set (1f1b here).
  const auto path =
      designs({"pp=2", "microbatch=2", "recompute=none", "schedule=1f1b", "plan.pipeline.schedule=zb_h1"});
  CHECK(count(path, "+zb_h1") == static_cast<std::ptrdiff_t>(path.size()));
}

TEST_CASE("Plan search: --gpus-per-node sets the host size on a profile of smaller hosts", "[unit][plan]") {
  // An 8-GPU-per-host scenario searched on GB200 NVL72 trays of 4 GPUs: the option applies to
  // the base and every candidate; EP inside the rack is offered and sends nothing over the NIC.
  PlanRequest q;
  q.gpus = 64;
  q.gpus_per_node = 4;
  q.search = {"design=ddp", "pp=1", "microbatch=2", "recompute=none", "layout=per_tensor"};
  const ScenarioSource source = plan_source(
      read_scenario(
          test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
          {"hardware=" + test::source_path("hardware_profiles/gb200-nvl72.json"), "architecture.moe.num_experts=64"}),
      q);
  const Scenario base = compose(source);
  CHECK(base.plan.gpus_per_node == 4);
  CHECK(base.plan.world() == 8);  // the scenario's own world, regrouped into hosts of 4
  const PlanSpace space = plan_space(source, base, q);
  CHECK(space.gpus_per_node == 4);
  const PlanSearchResult r = search_plans(source, space, PlanSearchOptions{});
  REQUIRE_FALSE(r.top.empty());
  bool wide_ep = false;
  for (const PlanRecord& rec : r.records) wide_ep = wide_ep || rec.design == "ddp+ep64";
  CHECK(wide_ep);

  PlanRequest too_big = q;
  too_big.gpus_per_node = 8;  // a GB200 host holds 4
  CHECK_THROWS_WITH(plan_space(source, base, too_big), Catch::Contains("exceeds the 4 GPUs of one host"));
}

TEST_CASE("Plan search: a best plan with TP is compared with the best without it", "[unit][plan]") {
  // The dense Figure 8 model on 8 GPUs ranked by memory headroom: splitting the weights over TP
  // ranks wins; the search also finds the best plan without TP (checked against replaying every
  // TP 1 candidate) and says where the two differ.
  const ScenarioSource source =
      read_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {"plan.batch.global_batch_tokens=262144"});
  PlanRequest q;
  q.gpus = 8;
  q.search = {"tp=1,2,4", "microbatch=1,2", "recompute=none", "design=ddp,fsdp"};
  const PlanSearchResult r = search(source, q, PlanObjective::memory_headroom, 2);
  REQUIRE_FALSE(r.top.empty());
  const auto tp_of = [&](std::size_t record) {
    return r.candidates[r.records[record].candidate].values.at("tp").get<std::int64_t>();
  };
  REQUIRE(tp_of(r.top[0]) > 1);
  REQUIRE(r.best_without_tp.has_value());
  CHECK(tp_of(*r.best_without_tp) == 1);
  double best = -1e300;
  std::size_t best_candidate = 0;
  for (const PlanRecord& rec : r.records) {
    if (r.candidates[rec.candidate].values.at("tp").get<std::int64_t>() != 1) continue;
    const SweepPoint p = run_point(source, candidate_changes(r.candidates[rec.candidate]), rec.candidate);
    REQUIRE(p.ok);
    if (p.result->ledger.oom) continue;
    const double headroom = p.result->ledger.stages[p.result->ledger.worst_stage].headroom;
    if (headroom > best) {
      best = headroom;
      best_candidate = rec.candidate;
    }
  }
  CHECK(r.records[*r.best_without_tp].candidate == best_candidate);
  const bool tp_phase = std::any_of(r.without_tp_phases.begin(), r.without_tp_phases.end(),
                                    [](const PhaseDifference& d) { return d.phase == "tp_comm"; });
  CHECK(tp_phase);
  const nlohmann::json doc = plan_json("x", r);
  CHECK(doc.at("best_vs_without_tp").at("runner_up") == r.records[*r.best_without_tp].candidate);
}

TEST_CASE("Plan search: tied plans share a place, the runner-up is the next place, families say where they lose",
          "[unit][plan]") {
  const ScenarioSource source = small_source();
  PlanRequest q = small_request();
  q.search.push_back("layout=per_tensor,concat_then_shard,same_param_count");
  const PlanSearchResult r = search(source, q, PlanObjective::tokens_per_s, 2);
  REQUIRE(r.top.size() >= 2);
  // The distributed optimizer's layouts do not change the step: such plans tie and share a place.
  std::size_t shared = 0;
  for (std::size_t k = 1; k < r.top.size(); ++k) {
    const PlanRecord &a = r.records[r.top[k - 1]], &b = r.records[r.top[k]];
    CHECK((*a.rank == *b.rank) == (a.score == b.score));
    shared += *a.rank == *b.rank ? 1 : 0;
  }
  CHECK(shared > 0);
  // The runner-up is the first plan of place 2, whose step differs from the best's.
  REQUIRE(r.runner_up.has_value());
  CHECK(*r.records[r.top[*r.runner_up]].rank == 2);
  CHECK(r.top_points[*r.runner_up].result->step_time_s != r.top_points[0].result->step_time_s);
  CHECK_FALSE(r.runner_up_phases.empty());
  // Every replayed plan names what it waits for most besides compute.
  for (const std::size_t i : r.top) {
    CHECK_FALSE(r.records[i].largest_non_compute_phase.empty());
    CHECK(r.records[i].largest_non_compute_s >= 0);
  }
  // Each other family's best says where the best plan wins against it; the best's own family
  // says nothing.
  const std::string best_family = r.candidates[r.records[r.top[0]].candidate].family;
  for (const auto& f : r.families) {
    if (!f.record) continue;
    INFO(f.family);
    CHECK(f.phases.empty() == (*f.record == r.top[0]));
  }
  const nlohmann::json doc = plan_json("small", r);
  CHECK(doc.at("best_vs_runner_up").at("runner_up") == r.records[r.top[*r.runner_up]].candidate);
  CHECK(doc.at("top").at(1).at("rank") == *r.records[r.top[1]].rank);
}

TEST_CASE("Plan search: a base plan's recompute modules leave with selective recompute", "[unit][plan]") {
  // The base plan lists Megatron-Core modules under selective recompute; a candidate with recompute
  // none or full drops the list instead of being refused for it.
  const ScenarioSource source =
      read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"),
                    {"architecture.moe.num_experts=8", "plan.batch.global_batch_tokens=262144",
                     "plan.activations.recompute=\"selective\"", "plan.activations.recompute_modules=[\"moe_act\"]"});
  PlanRequest q = small_request();
  q.search = {"microbatch=1", "recompute=none,full,selective", "schedule=1f1b"};
  const PlanSearchResult r = search(source, q, PlanObjective::tokens_per_s, 1);
  for (const auto& [reason, n] : r.refusals) CHECK(reason.find("recompute_modules") == std::string::npos);
  std::set<std::string> kinds;
  for (const auto& c : r.candidates)
    if (c.refusal.empty()) kinds.insert(c.values.at("recompute").get<std::string>());
  CHECK(kinds == std::set<std::string>{"full", "none", "selective"});
}
