// The `moesim` command as a user runs it: exit codes, no partial output, deterministic JSON.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using test::run_cli;
using test::slurp;
int run(const std::string& args) { return run_cli(args); }
}  // namespace

TEST_CASE("moesim ledger writes the JSON report and it is byte-identical across runs", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  REQUIRE(run("ledger " + scenario + " --set architecture.moe.num_experts=128 --json " + dir.path("a.json")) == 0);
  REQUIRE(run("ledger " + scenario + " --set architecture.moe.num_experts=128 --json " + dir.path("b.json")) == 0);
  const std::string a = slurp(dir.path("a.json"));
  CHECK(a == slurp(dir.path("b.json")));
  const auto j = nlohmann::json::parse(a);
  CHECK(j["oom"] == true);
  CHECK(j["design"] == "ddp");
  CHECK(j["capacity_GiB"].get<double>() == Approx(268.6));
  CHECK(j["model"]["flop_convention"] == "olmo-core");
  CHECK(j["inputs"]["architecture"]["moe"]["num_experts"] == 128);
}

TEST_CASE("Bad input exits 2 and leaves no output file", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  const std::string out = dir.path("out.json");
  CHECK(run("ledger " + scenario + " --set plan.expert_parallel.degree=5 --json " + out) == 2);
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(run("ledger " + dir.path("missing.json") + " --json " + out) == 2);
  CHECK(run("ledger") == 2);
  CHECK(run("frobnicate") == 2);
  CHECK_FALSE(std::filesystem::exists(out));
  // Nothing but the requested file lands in the folder (no stray temporaries).
  CHECK(std::filesystem::is_empty(dir.path("")));
}

TEST_CASE("Every bundled scenario loads and produces a ledger", "[unit]") {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(test::source_path("scenarios"))) {
    if (entry.path().extension() != ".json") continue;
    const auto doc = read_json_file(entry.path().string());
    if (!doc.contains("plan")) continue;  // architecture and plan files are parts, not scenarios
    INFO(entry.path());
    CHECK(run("ledger " + entry.path().string()) == 0);
  }
}

TEST_CASE("moesim simulate writes the step JSON and a Perfetto trace with a process per simulated rank", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  REQUIRE(run("simulate " + scenario + " --set plan.routing.model=zipf --json " + dir.path("s.json") + " --trace " +
              dir.path("t.json")) == 0);
  const auto step = nlohmann::json::parse(slurp(dir.path("s.json")));
  for (const char* key :
       {"design", "params_total", "params_active", "flops_per_token", "step_time_s", "tokens_per_s_per_gpu", "mfu",
        "peak_allocated_GiB", "peak_reserved_GiB", "capacity_GiB", "oom"}) {
    CHECK(step.contains(key));
  }
  CHECK(step["simulated_ranks"] == 8);  // skewed routing: one simulated rank per expert shard
  const auto trace = nlohmann::json::parse(slurp(dir.path("t.json")));
  std::set<int> processes, complete;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<int>());
    if (e["ph"] == "X") complete.insert(e["pid"].get<int>());
  }
  CHECK(processes.size() == 8);
  CHECK(complete == processes);
}
