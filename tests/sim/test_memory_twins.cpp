// Plan twins (sim/step_simulation.hpp same_step, restate_memory): plans that differ only in the
// distributed optimizer's shard layout give the same step, and a twin's result restated from
// another's replay is the result simulate() gives it, report for report.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/input/scenario.hpp"
#include "reports/step_report.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

Scenario with(const char* file, std::vector<std::string> sets) { return load_scenario(test::source_path(file), sets); }

// `sets` and one more (resized, then assigned: GCC 12's -Warray-bounds misreads a push_back of a
// string built from a literal).
std::vector<std::string> plus(std::vector<std::string> sets, const std::string& set) {
  sets.resize(sets.size() + 1);
  sets.back() = set;
  return sets;
}

// Every stage's ledger numbers and texts, in stage order.
std::vector<std::string> ledger_of(const StepResult& r) {
  std::vector<std::string> out;
  for (const StageLedger& s : r.ledger.stages) {
    out.push_back(std::to_string(s.persistent_bytes) + " " + std::to_string(s.peak_allocated) + " " +
                  std::to_string(s.peak_reserved) + " " + std::to_string(s.reserved_required) + " " +
                  std::to_string(s.headroom) + " " + s.allocator_basis);
  }
  return out;
}

}  // namespace

TEST_CASE("Layout twins: a restated result is the simulated one", "[unit][twins]") {
  // Pipelined (in-flight counts from the replay) and not (the Figure 8 DDP+EP8 point).
  const std::vector<std::pair<const char*, std::vector<std::string>>> cases = {
      {"scenarios/deepseek-v3-ddp-ep8-pp16.json", {}}, {"scenarios/fig8/moe-ddp-ep8.json", {}}};
  for (const auto& [file, sets] : cases) {
    const Scenario base = with(file, plus(sets, "plan.optimizer.layout=per_tensor"));
    const Simulation simulated = simulate(base, SimOptions{});
    for (const char* layout : {"concat_then_shard", "same_param_count"}) {
      INFO(file << " with layout " << layout);
      const Scenario twin = with(file, plus(sets, std::string("plan.optimizer.layout=") + layout));
      REQUIRE(same_step(base, twin));
      const StepResult restated = restate_memory(twin, simulated.result);
      const StepResult direct = simulate(twin, SimOptions{}).result;
      CHECK(step_json(twin, restated) == step_json(twin, direct));
      CHECK(ledger_of(restated) == ledger_of(direct));
      // The layout is not a label: the ledger differs from the first plan's.
      CHECK(ledger_of(restated) != ledger_of(simulated.result));
    }
  }
}

TEST_CASE("Layout twins: any other difference is another step", "[unit][twins]") {
  const char* file = "scenarios/fig8/moe-ddp-ep8.json";
  const Scenario base = with(file, {});
  CHECK(same_step(base, base));
  CHECK_FALSE(same_step(base, with(file, {"plan.activations.recompute=full"})));
  CHECK_FALSE(same_step(base, with(file, {"plan.ddp.distributed_optimizer=false"})));
  // The layout left out, whether one document names it or neither; its neighbours still count.
  Scenario no_layout = base;
  no_layout.resolved["plan"]["optimizer"].erase("layout");
  CHECK(same_step(base, no_layout));
  CHECK(same_step(no_layout, base));
  Scenario other_state = base;
  other_state.resolved["plan"]["optimizer"]["state_dtype"] = "bf16";
  CHECK_FALSE(same_step(base, other_state));
  CHECK_FALSE(same_step(other_state, no_layout));
  Scenario other_models = base;
  other_models.cost_models.collective = "another";
  CHECK_FALSE(same_step(base, other_models));
  Scenario other_flops = base;
  other_flops.flop_convention = "another";
  CHECK_FALSE(same_step(base, other_flops));
}

TEST_CASE("Layout twins: the step's code never reads the optimizer layout", "[unit][twins]") {
  // same_step's claim, held by the sources: the step builder, its schedules, the bound and the
  // kernel prices (sim/, models/costs/) name neither the plan's layout nor the layout registry,
  // but where memory_only_paths() declares it memory-only.
  namespace fs = std::filesystem;
  std::vector<std::string> readers;
  for (const char* folder : {"sim", "models/costs"}) {
    for (const auto& entry : fs::recursive_directory_iterator(test::source_path(folder))) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        const auto code = line.find_first_not_of(" \t");
        if (code != std::string::npos && line.compare(code, 2, "//") == 0) continue;          // a comment names it
        if (line.find("paths = {\"plan.optimizer.layout\"}") != std::string::npos) continue;  // the declaration
        if (line.find("optimizer.layout") != std::string::npos || line.find("optimizer_layouts") != std::string::npos) {
          readers.push_back(entry.path().string() + ": " + line);
        }
      }
    }
  }
  CHECK(readers == std::vector<std::string>{});
}
