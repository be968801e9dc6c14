// The JSON documents the CLI writes conform to the versioned schemas shipped in reports/schema/
// (required keys and types; see reports/README.md), and the checker catches what it should.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "models/common/cost_types.hpp"
#include "tests/reports/schema_checker.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

const std::string kStep = "urn:moesim:schema:step:1";
const std::string kSweep = "urn:moesim:schema:sweep:1";
const std::string kLedger = "urn:moesim:schema:ledger:1";
const std::string kCompare = "urn:moesim:schema:compare:1";
const std::string kPlan = "urn:moesim:schema:plan:1";
const std::string kFitRuns = "urn:moesim:schema:fit-runs:1";

const test::SchemaChecker& checker() {
  static const test::SchemaChecker c(test::source_path("reports/schema"));
  return c;
}

// Runs `moesim <args> --json FILE` and parses FILE.
nlohmann::json cli_json(const test::TempDir& dir, const std::string& args) {
  const std::string out = dir.path("out.json");
  REQUIRE(test::run_cli(args + " --json " + out) == 0);
  return nlohmann::json::parse(test::slurp(out));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Megatron-Core's sync-free MoE path over its budget: the step runs twice.
const std::string kRerunSets =
    " --set plan.expert_parallel.transport=hybridep --set plan.expert_parallel.rank_capacity_factor=1.5 --set "
    "plan.routing.model=zipf";

std::string scenario(const std::string& design) { return test::source_path("scenarios/fig8/moe-" + design + ".json"); }

}  // namespace

TEST_CASE("Every shipped schema is draft 2020-12 and names its document version", "[unit]") {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_path("reports/schema"))) {
    INFO(entry.path());
    const auto s = nlohmann::json::parse(test::slurp(entry.path().string()));
    CHECK(s["$schema"] == "https://json-schema.org/draft/2020-12/schema");
    CHECK(s["properties"]["schema"].contains("const"));
    ++files;
  }
  CHECK(files == 6);
  for (const auto& id : {kStep, kSweep, kLedger, kCompare, kPlan, kFitRuns}) CHECK_NOTHROW(checker().schema(id));
}

TEST_CASE("The step and ledger schemas name every EP transport", "[unit]") {
  std::set<std::string> names;
  for (const EpTransport t : all_ep_transports()) names.emplace(name_of(t));
  std::set<std::string> ledger, step;
  for (const auto& n : checker().schema(kLedger)["properties"]["plan"]["properties"]["ep_transport"]["enum"])
    ledger.insert(n.get<std::string>());
  for (const auto& n : checker().schema(kStep)["properties"]["ep_transport"]["enum"]) step.insert(n.get<std::string>());
  CHECK(ledger == names);
  names.insert("none");  // a step without EP
  CHECK(step == names);
}

TEST_CASE("simulate --json conforms to moesim-step/1", "[unit]") {
  test::TempDir dir;
  for (const char* design : {"ddp", "ddp-ep8", "fsdp"}) {
    INFO(design);
    const auto doc = cli_json(dir, "simulate " + scenario(design));
    CHECK(doc["schema"] == "moesim-step/1");
    const auto errors = checker().check(doc, kStep);
    INFO(joined(errors));
    CHECK(errors.empty());
  }
  // A step the sync-free MoE path reruns names why and has its rerun phase.
  const auto rerun = cli_json(dir, "simulate " + scenario("ddp-ep8") + kRerunSets);
  CHECK(rerun.at("rerun").get<std::string>().find("over its budget") != std::string::npos);
  CHECK(rerun.at("exposed_s").at("rerun").get<double>() > 0);
  CHECK(checker().check(rerun, kStep).empty());
  // A stack value the profile cannot price carries a note (composer's FlashAttention-2 on B300).
  const auto doc = cli_json(dir, "simulate " + scenario("ddp") + " --set plan.stack='\"composer\"'");
  CHECK(doc.at("stack").at("taken").dump().find("\"note\"") != std::string::npos);
  const auto errors = checker().check(doc, kStep);
  INFO(joined(errors));
  CHECK(errors.empty());
}

TEST_CASE("The step's memory_by_class adds up to its peak allocation", "[unit]") {
  test::TempDir dir;
  for (const char* design : {"ddp", "fsdp"}) {
    INFO(design);
    const auto doc = cli_json(dir, "simulate " + scenario(design));
    double sum = 0;
    for (const auto& [cls, entry] : doc["memory_by_class"].items()) sum += entry["GiB"].get<double>();
    CHECK(sum == Approx(doc["peak_allocated_GiB"].get<double>()).epsilon(1e-9));
    CHECK(doc["memory_by_class"]["main_weights"]["kind"] == "persistent");
    CHECK(doc["memory_by_class"]["activations"]["kind"] == "working");
    // FSDP keeps no persistent BF16 weights: they exist only while gathered.
    CHECK(doc["memory_by_class"].contains("compute_weights") == (std::string(design) == "ddp"));
    CHECK(doc["memory_by_class"].contains("fsdp_materialized") == (std::string(design) == "fsdp"));
  }
}

TEST_CASE("sweep --json conforms to moesim-sweep/1, invalid points included", "[unit]") {
  test::TempDir dir;
  const auto doc = cli_json(
      dir, "sweep " + scenario("ddp") +
               " --vary plan.expert_parallel.degree=1,3,8 --vary plan.ddp.distributed_optimizer=true,false -j 2");
  CHECK(doc["summary"]["invalid"].get<int>() > 0);
  const auto errors = checker().check(doc, kSweep);
  INFO(joined(errors));
  CHECK(errors.empty());
}

TEST_CASE("ledger --json conforms to moesim-ledger/1, pipeline stages included", "[unit]") {
  test::TempDir dir;
  for (const std::string& extra :
       std::vector<std::string>{"", " --set plan.pipeline.degree=2", " --set design=ddp+ep8" + kRerunSets}) {
    INFO(extra);
    const auto doc = cli_json(dir, "ledger " + scenario("ddp") + extra);
    CHECK(doc.contains("rerun") == (extra.find("zipf") != std::string::npos));
    const auto errors = checker().check(doc, kLedger);
    INFO(joined(errors));
    CHECK(errors.empty());
  }
}

TEST_CASE("The rebuild buffers are class weight_rebuild, the update temporaries optimizer_transients", "[unit]") {
  test::TempDir dir;
  // One name per buffer kind in the ledger, its schema, the step's memory_by_class and the page.
  const auto ledger = cli_json(dir, "ledger " + scenario("ddp") + " --set architecture.moe.num_experts=64");
  const auto& stage = ledger["stages"][0];
  CHECK(stage["peak_phase"] == "weight_rebuild");
  std::size_t rebuild_items = 0;
  for (const auto& phase : stage["phases"]) {
    for (const auto& item : phase["items"]) {
      INFO(phase["phase"] << ": " << item["name"]);
      if (item["class"] == "weight_rebuild") {
        ++rebuild_items;
        CHECK(phase["phase"] == "weight_rebuild");
        CHECK(item["name"] == "coalesced all-gather buffers");
        CHECK(item["GiB"].get<double>() > 0);
      }
      if (phase["phase"] == "optimizer_step") CHECK(item["class"] == "optimizer_transients");
    }
  }
  CHECK(rebuild_items == 1);
  const auto& classes = checker().schema(kLedger)["$defs"]["item"]["properties"]["class"]["enum"];
  CHECK(std::find(classes.begin(), classes.end(), "weight_rebuild") != classes.end());
  CHECK(classes.size() == static_cast<std::size_t>(MemClass::weight_rebuild) + 1);  // every class, once
  // The step at the same point charges the rebuild buffers to weight_rebuild, none to the update.
  const auto step = cli_json(dir, "simulate " + scenario("ddp") + " --set architecture.moe.num_experts=64");
  CHECK(step["breaking_phase"] == "weight_rebuild");
  CHECK(step["memory_by_class"]["weight_rebuild"]["GiB"].get<double>() ==
        Approx(stage["phases"][4]["GiB"].get<double>()));
  CHECK(step["memory_by_class"]["weight_rebuild"]["kind"] == "working");
  CHECK_FALSE(step["memory_by_class"].contains("optimizer_transients"));
}

TEST_CASE("compare --json conforms to moesim-compare/1, and with --stack to moesim-sweep/1", "[unit][stacks]") {
  test::TempDir dir;
  const auto doc = cli_json(dir, "compare " + scenario("ddp") + " --design ddp --design fsdp -j 2");
  const auto errors = checker().check(doc, kCompare);
  INFO(joined(errors));
  CHECK(errors.empty());
  // One point per stack, a sweep over plan.stack.
  const auto stacks =
      cli_json(dir, "compare " + scenario("ddp-ep8") + " --stack megatron-core --stack torchtitan -j 1");
  CHECK(checker().check(stacks, kSweep).empty());
  REQUIRE(stacks["points"].size() == 2);
  CHECK(stacks["points"][0]["values"]["plan.stack"] == "megatron-core");
  CHECK(stacks["points"][0]["result"]["stack"]["name"] == "megatron-core");
}

TEST_CASE("The schema checker reports missing keys, wrong types and bad constants by path", "[unit]") {
  test::TempDir dir;
  auto doc = cli_json(dir, "sweep " + scenario("ddp") + " --vary design=ddp,fsdp -j 1");
  REQUIRE(checker().check(doc, kSweep).empty());
  doc["points"][1]["result"].erase("mfu");
  doc["points"][0]["result"]["oom"] = "no";
  doc["points"][0]["result"]["memory_by_class"]["activations"]["kind"] = "sometimes";
  doc["summary"]["points"] = 2.5;
  doc["schema"] = "moesim-sweep/2";
  doc["points"][1]["status"] = "invalid";  // then an error message is required
  const auto errors = checker().check(doc, kSweep);
  const std::string text = joined(errors);
  INFO(text);
  CHECK(text.find("/points/1/result: missing required key 'mfu'") != std::string::npos);
  CHECK(text.find("/points/0/result/oom: expected type \"boolean\", found string") != std::string::npos);
  CHECK(text.find("/points/0/result/memory_by_class/activations/kind: \"sometimes\" is not one of") !=
        std::string::npos);
  CHECK(text.find("/summary/points: expected type \"integer\", found number") != std::string::npos);
  CHECK(text.find("/schema: expected \"moesim-sweep/1\"") != std::string::npos);
  CHECK(text.find("/points/1: missing required key 'error'") != std::string::npos);
  CHECK(errors.size() == 6);
}

// The hand-written plan document (tests/data/plan/plan-sample.json; its top points are real
// `moesim sweep` points) beside the documents `moesim plan --json` writes (tested below).
namespace {
nlohmann::json plan_sample() {
  return nlohmann::json::parse(test::slurp(test::source_path("tests/data/plan/plan-sample.json")));
}
}  // namespace

TEST_CASE("The plan fixture conforms to moesim-plan/1", "[unit]") {
  const auto doc = plan_sample();
  const auto errors = checker().check(doc, kPlan);
  INFO(joined(errors));
  CHECK(errors.empty());
  // The fixture covers what the schema allows: every status, a plan in the top K and one out of it.
  std::set<std::string> statuses;
  for (const auto& p : doc["plans"]) statuses.insert(p["status"].get<std::string>());
  CHECK(statuses == std::set<std::string>{"replayed", "pruned_by_memory", "pruned_by_bound"});
  const auto& counts = doc["counts"];
  CHECK(counts["enumerated"] == counts["refused_by_rule"].get<int>() + counts["pruned_by_memory"].get<int>() +
                                    counts["pruned_by_bound"].get<int>() + counts["replayed"].get<int>());
  CHECK(doc["plans"].size() == counts["enumerated"].get<std::size_t>() - counts["refused_by_rule"].get<std::size_t>());
}

TEST_CASE("A plan document with a missing field or a bad status fails moesim-plan/1", "[unit]") {
  auto doc = plan_sample();
  doc["plans"][3].erase("fits");
  doc["plans"][1]["status"] = "skipped";
  doc["plans"][0].erase("rank");                  // a replayed plan says whether it is in the top K
  doc["top"][0]["point"]["result"].erase("mfu");  // the top points are sweep points with step results
  doc["request"]["objective"] = "speed";
  doc["families"][1]["relative_to_best"] = "n/a";
  const auto errors = checker().check(doc, kPlan);
  const std::string text = joined(errors);
  INFO(text);
  CHECK(text.find("/plans/3: missing required key 'fits'") != std::string::npos);
  CHECK(text.find("/plans/1/status: \"skipped\" is not one of") != std::string::npos);
  CHECK(text.find("/plans/0: missing required key 'rank'") != std::string::npos);
  CHECK(text.find("/top/0/point/result: missing required key 'mfu'") != std::string::npos);
  CHECK(text.find("/request/objective: \"speed\" is not one of") != std::string::npos);
  CHECK(text.find("/families/1/relative_to_best: expected type [\"number\",\"null\"], found string") !=
        std::string::npos);
  CHECK(errors.size() == 6);
}

TEST_CASE("plan --json conforms to moesim-plan/1, and the page renders it", "[unit][plan]") {
  test::TempDir dir;
  const auto doc = cli_json(dir, "plan " + scenario("ddp-ep8") +
                                     " --gpus 8 --set architecture.moe.num_experts=8 --global-batch 256Ki"
                                     " --search microbatch=1,2 --search recompute=none,full --top 3 -j 2");
  // Three places; plans of equal step share one.
  REQUIRE(doc["top"].size() >= 3);
  CHECK(doc["top"].back()["rank"] == 3);
  const auto errors = checker().check(doc, kPlan);
  INFO(joined(errors));
  CHECK(errors.empty());
  CHECK(test::run_cli("plan " + scenario("ddp-ep8") +
                      " --gpus 8 --set architecture.moe.num_experts=8 --global-batch 256Ki --search pp=1 --html " +
                      dir.path("plan.html")) == 0);
  CHECK(test::slurp(dir.path("plan.html")).find("moesim-plan-frontier") != std::string::npos);
}

TEST_CASE("fit runs --json conforms to moesim-fit-runs/1", "[unit]") {
  test::TempDir dir;
  const std::string args = "fit runs " + test::source_path("scenarios/runs/fig8a.json") +
                           " --base b300-hgx --free hardware.host.step_overhead_us -o " + dir.path("fitted.json") +
                           " --predict " + test::source_path("scenarios/runs/fig8b.json");
  const nlohmann::json doc = cli_json(dir, args);
  CHECK(joined(checker().check(doc, kFitRuns)) == "");
  CHECK(doc["parameters"].size() == 1);
  CHECK(doc["leave_one_out"]["predictions"].size() == 4);
  CHECK(doc["predicted"][0]["predictions"].size() == 6);
  CHECK(doc["warnings"].size() >= 5);  // the 8b runs lie outside the 8a runs
}
