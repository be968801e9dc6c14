// Ledger structures (models/memory/ledger_structure.hpp): a stage's tensors, view, persistent state
// and update buffers never depend on the microbatch or the recompute policy, so a plan search
// shares one structure among plans that differ only there; the ledger made on a shared structure
// is the ledger made alone, stage for stage and text for text.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "models/memory/ledger_structure.hpp"
#include "sim/step_simulation.hpp"
#include "studies/plan_structures.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

void put_items(std::ostringstream& out, const std::vector<LedgerItem>& items) {
  for (const LedgerItem& i : items) {
    out << i.name << '|' << name_of(i.cls) << '|' << i.bytes << '|' << i.basis;
    for (const auto& [format, bytes] : i.by_format) out << '|' << format << '=' << bytes;
    out << '\n';
  }
}

// Everything a structure holds, as text (streams: GCC 12 misreads long string concatenations).
std::string structure_text(const LedgerStructure& st) {
  std::ostringstream out;
  out.precision(17);
  for (const StageStructure& s : st.stages) {
    for (const LocalTensor& t : s.tensors)
      out << t.tensor->name << ' ' << t.local_numel << ' ' << t.replica_group << ' ' << t.tp_share << '\n';
    for (const std::int64_t l : s.view.layers) out << "layer " << l << '\n';
    for (const LayerPlace& p : s.view.places) out << p.stage << ':' << p.chunk << ' ';
    out << (s.view.has_head ? "head" : "no head") << '\n';
    for (const auto& [l, n] : s.view.unit_numel) out << l << '=' << n << ' ';
    for (const auto& [l, n] : s.view.largest_local) out << l << '<' << n << ' ';
    out << '\n';
    put_items(out, s.persistent);
    out << s.optimizer.layout << ' ' << s.optimizer.largest_bytes << ' ' << s.optimizer.even_share_bytes << ' '
        << s.optimizer.replicated_tensors << ' ' << s.optimizer.sharded_tensors << '\n'
        << s.update.shard;
    for (const auto& [pack, gather] : s.update.packs) out << ' ' << pack << '/' << gather;
    out << '\n';
  }
  return out.str();
}

// Every stage's ledger, numbers and texts.
std::string ledger_text(const MemoryLedger& ledger) {
  std::ostringstream out;
  out.precision(17);
  out << ledger.worst_stage << (ledger.oom ? " oom" : "") << '\n';
  for (const StageLedger& s : ledger.stages) {
    out << s.stage << ' ' << s.peak_allocated << ' ' << s.peak_reserved << ' ' << s.reserved_required << ' '
        << s.headroom << ' ' << s.allocator_basis << '\n';
    put_items(out, s.persistent);
    for (const PhaseSet& p : s.phases) {
      out << name_of(p.phase) << '\n';
      put_items(out, p.items);
    }
    put_items(out, s.top_contributors);
  }
  return out.str();
}

Scenario with(const char* file, const std::vector<std::string>& sets) {
  return load_scenario(test::source_path(file), sets);
}

}  // namespace

TEST_CASE("Ledger structure: the microbatch and the recompute policy change none of it", "[unit][ledger]") {
  // Every design family, pipelines, TP, EP x ETP, CP and FSDP with op-level checkpointing.
  const std::vector<std::pair<const char*, std::vector<std::string>>> cases = {
      {"scenarios/fig8/moe-ddp-ep8.json", {}},
      {"scenarios/fig8/moe-fsdp.json", {}},
      {"scenarios/fig8/moe-ddp-ep8.json", {"design=zero2+ep8"}},
      {"scenarios/fig8/moe-ddp-ep8.json", {"design=ddp+ep8+nodistopt"}},
      {"scenarios/gallery/mpt-7b.json", {"design=fsdp+fsdp1"}},
      {"scenarios/gallery/nemotron-h-8b.json", {}},
      {"scenarios/deepseek-v3-ddp-ep8-pp16.json", {}},
      {"scenarios/h100-llama3-70b-like-tp8-pp4.json", {}},
      {"scenarios/h100-mixtral-8x7b-like-tp2-ep4-etp2.json", {}},
      {"scenarios/h100-llama3.1-8b-fsdp8-op-sac.json", {}},
      {"scenarios/h100-llama3-405b-like-tp8-cp16-pp16-128k.json", {}}};
  for (const auto& [file, sets] : cases) {
    const Scenario base = with(file, sets);
    const Inventory inv = build_inventory(base.arch);
    const LedgerStructure shared = ledger_structure(base.arch, inv, base.plan);
    REQUIRE(shared.stages.size() == static_cast<std::size_t>(base.plan.pp));
    int composed = 0;
    for (const char* microbatch : {"1", "2"}) {
      for (const char* recompute : {"none", "selective", "full"}) {
        std::vector<std::string> variant = sets;
        variant.resize(variant.size() + 2);
        variant[variant.size() - 2] = std::string("plan.batch.rank_microbatch_sequences=") + microbatch;
        variant.back() = std::string("plan.activations.recompute=") + recompute;
        INFO(file << " " << (sets.empty() ? "" : sets.front()) << " microbatch " << microbatch << " recompute "
                  << recompute);
        Scenario s;
        try {
          s = with(file, variant);
        } catch (const InputError&) {
          continue;  // a microbatch the batch does not divide into, a policy the plan refuses
        }
        ++composed;
        CHECK(structure_text(ledger_structure(s.arch, inv, s.plan)) == structure_text(shared));
        CHECK(ledger_text(scenario_ledger(s, shared)) == ledger_text(scenario_ledger(s, inv)));
      }
    }
    CHECK(composed >= 3);
  }
}

TEST_CASE("Ledger structure: what it does read changes it", "[unit][ledger]") {
  const char* file = "scenarios/deepseek-v3-ddp-ep8-pp16.json";
  const Scenario base = with(file, {"plan.optimizer.layout=per_tensor"});
  const Inventory inv = build_inventory(base.arch);
  const std::string text = structure_text(ledger_structure(base.arch, inv, base.plan));
  for (const char* set : {"plan.optimizer.layout=concat_then_shard", "plan.expert_parallel.degree=16",
                          "plan.ddp.distributed_optimizer=false", "plan.pipeline.degree=8"}) {
    INFO(set);
    const Scenario other = with(file, {"plan.optimizer.layout=per_tensor", set});
    CHECK(structure_text(ledger_structure(other.arch, inv, other.plan)) != text);
  }
}

TEST_CASE("Ledger structure: a search shares one only across the paths it never reads", "[unit][ledger]") {
  const auto candidate = [](std::vector<PlanSet> sets, PointOverrides paths = {}) {
    PlanCandidate c;
    c.sets = std::move(sets);
    c.paths = std::move(paths);
    return c;
  };
  const PlanCandidate key = candidate({{&plan_key::ep_degree, 8}, {&plan_key::optimizer_layout, "per_tensor"}});
  CHECK(same_structure(candidate({{&plan_key::ep_degree, 8},
                                  {&plan_key::microbatch_sequences, 4},
                                  {&plan_key::optimizer_layout, "per_tensor"},
                                  {&plan_key::recompute, "full"}}),
                       key));
  CHECK_FALSE(
      same_structure(candidate({{&plan_key::ep_degree, 8}, {&plan_key::optimizer_layout, "same_param_count"}}), key));
  CHECK_FALSE(same_structure(candidate({{&plan_key::ep_degree, 8}}), key));
  CHECK_FALSE(same_structure(
      candidate({{&plan_key::ep_degree, 8}, {&plan_key::optimizer_layout, "per_tensor"}, {&plan_key::pp_degree, 2}}),
      key));
  // A path axis's value is read unless proven otherwise.
  CHECK_FALSE(same_structure(candidate({{&plan_key::ep_degree, 8}, {&plan_key::optimizer_layout, "per_tensor"}},
                                       {{"plan.ddp.bucket_cap_MiB", 100}}),
                             key));
}
