// What a new user types before reading the schema: a bundled profile's name as a scenario's
// "hardware", sizes with a suffix in JSON, a misspelt required key, a profile number without its
// provenance object; the plan search's margin (--min-headroom), its candidate limit
// (--max-candidates) and its progress on stderr; a trace of chosen ranks (--trace-ranks).
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "models/input/scenario.hpp"
#include "reports/trace_writer.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using Ran = test::CliRun;
Ran moesim_cli(const std::string& args) { return test::run_cli_captured(args); }

// A scenario in `dir` with the Figure 8 DDP+EP8 model and plan (by absolute path) and `hardware`
// as given (JSON text); `extra` adds top-level keys.
std::string scenario_with(const test::TempDir& dir, const std::string& hardware, const std::string& extra = "") {
  std::string text = "{\"architecture\": \"";
  text += test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json");
  text += "\", \"plan\": \"";
  text += test::source_path("scenarios/plans/ddp-ep8-1node.json");
  text += "\", \"hardware\": ";
  text += hardware;
  text += extra;
  text += "}";
  return dir.write("scenario.json", text);
}

const std::string kScenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
}  // namespace

TEST_CASE("a scenario's hardware may name a bundled profile, as --profile does", "[unit]") {
  const test::TempDir dir;
  const Ran by_name = moesim_cli("ledger " + scenario_with(dir, "\"b300-hgx\"") + " --json -");
  REQUIRE(by_name.rc == 0);
  const Ran by_file = moesim_cli("ledger " + kScenario + " --json -");
  REQUIRE(by_file.rc == 0);
  // The same profile: the same ledger, but for the scenario's name and where the inputs were read.
  const auto a = nlohmann::json::parse(by_name.out), b = nlohmann::json::parse(by_file.out);
  CHECK(a.at("stages") == b.at("stages"));
  // --set hardware=NAME swaps it the same way.
  CHECK(moesim_cli("ledger " + kScenario + " --set hardware=h100-hgx").out.find("hardware h100-hgx") !=
        std::string::npos);
  // An unknown name is refused at the scenario's "hardware" with the bundled names.
  const Ran typo = moesim_cli("ledger " + scenario_with(dir, "\"h100-hbx\""));
  CHECK(typo.rc == 2);
  CHECK_THAT(typo.err, Catch::Contains("scenario.json: hardware: \"h100-hbx\": no such profile file or bundled "
                                       "profile; did you mean 'h100-hgx'? bundled profiles: "));
}

TEST_CASE("a size with a suffix is a number in JSON input too", "[unit]") {
  const test::TempDir dir;
  const std::string sized = scenario_with(dir, "\"b300-hgx\"", R"(, "set": {"plan.batch.global_batch_tokens": "2Mi"})");
  const Ran a = moesim_cli("simulate " + sized + " --json -");
  REQUIRE(a.rc == 0);
  const Ran b = moesim_cli("simulate " + kScenario + " --set plan.batch.global_batch_tokens=2097152 --json -");
  REQUIRE(b.rc == 0);
  CHECK(nlohmann::json::parse(a.out).at("step_time_s") == nlohmann::json::parse(b.out).at("step_time_s"));
  // Inside a section file too, and a string that is no size still says what is allowed.
  std::string plan = test::slurp(test::source_path("scenarios/plans/ddp-ep8-1node.json"));
  const std::string exact = "\"global_batch_tokens\": 4194304";
  REQUIRE(plan.find(exact) != std::string::npos);
  plan.replace(plan.find(exact), exact.size(), "\"global_batch_tokens\": \"4Mi\"");
  const std::string plan_file = dir.write("plan.json", plan);
  const std::string arch = test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json");
  const std::string inline_plan = dir.write(
      "s2.json", "{\"architecture\": \"" + arch + "\", \"plan\": \"" + plan_file + "\", \"hardware\": \"b300-hgx\"}");
  const Ran c = moesim_cli("simulate " + inline_plan + " --json -");
  REQUIRE(c.rc == 0);
  CHECK(nlohmann::json::parse(c.out).at("step_time_s") ==
        nlohmann::json::parse(moesim_cli("simulate " + kScenario + " --json -").out).at("step_time_s"));
  const Ran words = moesim_cli("ledger " + kScenario + " --set 'plan.batch.global_batch_tokens=\"lots\"'");
  CHECK(words.rc == 2);
  CHECK_THAT(words.err, Catch::Contains("plan.batch.global_batch_tokens: expected an integer"));
  CHECK_THAT(words.err, Catch::Contains("sizes with a suffix such as \"4Mi\""));
}

TEST_CASE("a misspelt required key is named as the unknown key it is", "[unit]") {
  const test::TempDir dir;
  std::string arch = test::slurp(test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json"));
  REQUIRE(arch.find("\"num_layers\"") != std::string::npos);
  arch.replace(arch.find("\"num_layers\""), 12, "\"num_layer\"");
  const std::string file = dir.write("arch.json", arch);
  const Ran r = moesim_cli("ledger " + kScenario + " --set architecture=" + file);
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("arch.json: num_layer: unknown key; did you mean 'num_layers'?"));
  CHECK(r.err.find("required field is missing") == std::string::npos);
  // A scenario's own sections too: "plann" beside a missing "plan".
  const std::string scenario = dir.write(
      "s.json", "{\"architecture\": \"" + test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json") +
                    "\", \"plann\": \"" + test::source_path("scenarios/plans/ddp-1node.json") +
                    "\", \"hardware\": \"b300-hgx\"}");
  const Ran s = moesim_cli("ledger " + scenario);
  CHECK(s.rc == 2);
  CHECK_THAT(s.err, Catch::Contains("s.json: plann: unknown key; did you mean 'plan'?"));
  CHECK(s.err.find("required:") == std::string::npos);
}

TEST_CASE("a profile number without its provenance object says where the number goes", "[unit]") {
  const Ran r = moesim_cli("ledger " + kScenario + " --set hardware.memory.usable_capacity_GiB=80");
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Catch::Contains("memory.usable_capacity_GiB: expected an object"));
  CHECK_THAT(r.err, Catch::Contains("(the value goes in memory.usable_capacity_GiB.value)"));
}

TEST_CASE("moesim plan: --min-headroom keeps a margin, --max-candidates bounds the space, progress on stderr",
          "[unit]") {
  const std::string base = "plan " + kScenario + " --gpus 8 --search design=ddp --search microbatch=1,2 --json -";
  const Ran plain = moesim_cli(base);
  REQUIRE(plain.rc == 0);
  const auto doc = nlohmann::json::parse(plain.out);
  REQUIRE_FALSE(doc.at("top").empty());
  // Progress: one line per stage when stderr is not a terminal.
  CHECK_THAT(plain.err, Catch::Contains("plan: screened "));
  CHECK_THAT(plain.err, Catch::Contains("plan: replayed "));
  // A margin above every fitting plan's headroom leaves none that fits; one below the best's
  // keeps it.
  double most = 0;
  for (const auto& p : doc.at("plans"))
    if (p.at("fits").get<bool>()) most = std::max(most, p.at("headroom_GiB").get<double>());
  REQUIRE(most > 1);
  const Ran none = moesim_cli(base + " --min-headroom " + std::to_string(most + 1));
  CHECK(none.rc == 3);
  CHECK(nlohmann::json::parse(none.out).at("request").at("min_headroom_GiB").get<double>() ==
        Approx(most + 1).margin(1e-5));
  const auto none_doc = nlohmann::json::parse(none.out);
  REQUIRE_FALSE(none_doc.at("plans").empty());
  for (const auto& p : none_doc.at("plans")) CHECK_FALSE(p.at("fits").get<bool>());
  const Ran some = moesim_cli(base + " --min-headroom " + std::to_string(most - 1));
  CHECK(some.rc == 0);
  const auto some_doc = nlohmann::json::parse(some.out);
  std::size_t fitting = 0;
  for (const auto& p : some_doc.at("plans")) {
    if (!p.at("fits").get<bool>()) continue;
    ++fitting;
    CHECK(p.at("headroom_GiB").get<double>() >= most - 1);
  }
  CHECK(fitting > 0);
  // The listing's legend says what headroom counts.
  CHECK_THAT(moesim_cli("plan " + kScenario + " --gpus 8 --search design=ddp").out,
             Catch::Contains("cached segments it can release count as room"));
  // Too many candidates: refused before any is screened, with the count and what to do.
  const Ran capped = moesim_cli("plan " + kScenario + " --gpus 8 --max-candidates 3");
  CHECK(capped.rc == 2);
  CHECK_THAT(capped.err, Catch::Contains("--max-candidates: 3: the search space holds more than 3 candidate plans"));
  CHECK_THAT(capped.err, Catch::Contains("narrow an axis with --search"));
}

TEST_CASE("simulate --trace-ranks writes the chosen simulated ranks and says how large a trace is", "[unit]") {
  const test::TempDir dir;
  const std::string base = "simulate " + kScenario + " --all-ranks --trace " + dir.path("t.json");
  const Ran some = moesim_cli(base + " --trace-ranks 0,5-6");
  REQUIRE(some.rc == 0);
  std::set<int> pids;
  const auto trace = nlohmann::json::parse(test::slurp(dir.path("t.json")));
  for (const auto& e : trace.at("traceEvents")) pids.insert(e.at("pid").get<int>());
  CHECK(pids == std::set<int>{0, 5, 6});
  // The count is known before the text is built: it matches what trace_json writes.
  CHECK(some.err.find("MiB") == std::string::npos);  // a small trace is written without a word
  const Ran typo = moesim_cli(base + " --trace-ranks 0-x");
  CHECK(typo.rc == 2);
  CHECK_THAT(typo.err, Catch::Contains("--trace-ranks: 0-x: '0-x' is not a rank or a range"));
  const Ran beyond = moesim_cli("simulate " + kScenario + " --trace " + dir.path("u.json") + " --trace-ranks 3");
  CHECK(beyond.rc == 2);
  CHECK_THAT(beyond.err, Catch::Contains("rank 3 is not simulated: the step simulates 1 rank(s)"));
  CHECK(moesim_cli("simulate " + kScenario + " --trace-ranks 0").rc == 2);  // needs --trace
}

TEST_CASE("trace_event_count counts the events trace_json writes", "[unit]") {
  const Scenario s = load_scenario(kScenario, {});
  SimOptions options;
  options.all_ranks = true;
  const Simulation sim = simulate(s, options);
  for (const std::vector<std::uint32_t>& ranks : {std::vector<std::uint32_t>{}, std::vector<std::uint32_t>{0, 5, 6}}) {
    const auto doc = nlohmann::json::parse(trace_json(sim, ranks));
    CHECK(doc.at("traceEvents").size() == trace_event_count(sim, ranks));
  }
}

TEST_CASE("sweep --html refuses a page too large to open, before any point runs", "[unit]") {
  const test::TempDir dir;
  const Ran big = moesim_cli("sweep " + kScenario + " --vary plan.batch.global_batch_tokens=1..60000+1 --html " +
                             dir.path("p.html"));
  CHECK(big.rc == 2);
  CHECK_THAT(big.err, Catch::Contains(
                          "p.html: a page of 60000 points (about 205 MiB) would take minutes and gigabytes to open"));
  CHECK_FALSE(std::filesystem::exists(dir.path("p.html")));
}
