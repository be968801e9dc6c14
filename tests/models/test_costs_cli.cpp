// `moesim cost ...` as a user runs it: strict sizes, exit code 2 for bad input, JSON output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/wait.h>

#include "models/costs/profile_cost_book.hpp"
#include "models/input/scenario.hpp"
#include "sim/resource_sharing.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using test::run_cli;
using test::slurp;
int run(const std::string& args) { return run_cli(args); }

std::string profile() { return " --profile " + test::source_path("hardware_profiles/b300-hgx.json"); }
}  // namespace

TEST_CASE("moesim cost collective writes time, algbw, busbw and the algorithm as JSON", "[unit]") {
  test::TempDir dir;
  const std::string out = dir.path("c.json");
  REQUIRE(run("cost collective" + profile() + " --kind all_reduce --bytes 1GiB --ranks 8 --json " + out) == 0);
  const auto j = nlohmann::json::parse(slurp(out));
  CHECK(j["result"]["algorithm"] == "nvls");
  CHECK(j["request"]["bytes"].get<double>() == 1073741824.0);
  CHECK(j["result"]["busbw_GBps"].get<double>() > 695);
  CHECK(j["algorithms"].size() == 3);  // ring, tree, nvls
  REQUIRE(run("cost collective" + profile() + " --kind all_reduce --bytes 1GiB --ranks 8 --json " +
              dir.path("d.json")) == 0);
  CHECK(slurp(out) == slurp(dir.path("d.json")));
  REQUIRE(run("cost collective" + profile() +
              " --kind all_gather --bytes 256MiB --ranks 16 --ranks-per-node 8 --algorithm ring --json " + out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["result"]["nodes"] == 2);
}

TEST_CASE("moesim cost gemm, grouped-gemm, attention and memory run", "[unit]") {
  test::TempDir dir;
  const std::string out = dir.path("k.json");
  REQUIRE(run("cost gemm" + profile() + " --m 16384 --n 8192 --k 4096 --json " + out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["result"]["achieved_TFLOPs"].get<double>() > 1000);
  REQUIRE(run("cost grouped-gemm" + profile() + " --experts 32 --tokens 16384 --top-k 4 --n 4096 --k 4096 --json " +
              out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["request"]["rows_per_expert"][0] == 2048.0);
  CHECK(run("cost grouped-gemm" + profile() + " --rows 512,2048,0 --n 4096 --k 4096") == 0);
  CHECK(run("cost attention" + profile() + " --sequences 2 --seq-len 8192 --heads 32 --kv-heads 8 --head-dim 128") ==
        0);
  CHECK(run("cost memory" + profile() + " --bytes 256MiB") == 0);
  // A sliding window and MLA's value width: the request carries them, the FLOPs follow them.
  REQUIRE(run("cost attention" + profile() +
              " --seq-len 4096 --heads 64 --kv-heads 8 --head-dim 64 --window 128 --json " + out) == 0);
  const nlohmann::json w = nlohmann::json::parse(slurp(out));
  CHECK(w["request"]["window"] == 128);
  CHECK(w["result"]["forward"]["flops"].get<double>() == Approx(2.0 * (4096.0 * 128 - 128.0 * 128 / 2) * 64 * 128));
  REQUIRE(run("cost attention" + profile() + " --seq-len 4096 --heads 128 --head-dim 192 --v-head-dim 128 --json " +
              out) == 0);
  CHECK(nlohmann::json::parse(slurp(out))["result"]["forward"]["flops"].get<double>() ==
        Approx(2.0 * 4096 * 4096 / 2 * 128 * (192 + 128)));
}

TEST_CASE("moesim cost rejects bad input with exit code 2", "[unit]") {
  const std::string base = "cost collective" + profile() + " --ranks 8 --bytes ";
  CHECK(run(base + "1GiB") == 0);
  CHECK(run(base + "4096") == 0);
  CHECK(run(base + "1gib") == 2);  // units are case-sensitive: GiB or GB
  CHECK(run(base + "1 GiB") == 2);
  CHECK(run(base + "-5") == 2);
  CHECK(run(base + "GiB") == 2);
  CHECK(run(base + "1GiBx") == 2);
  CHECK(run(base + "1GiB --kind allreduce") == 2);
  CHECK(run(base + "1GiB --algorithm butterfly") == 2);
  CHECK(run(base + "1GiB --kind all_gather --algorithm nvls") == 2);
  CHECK(run(base + "1GiB --ranks-per-node 16") == 2);
  CHECK(run("cost collective --profile missing.json --ranks 8 --bytes 1GiB") == 2);
  CHECK(run("cost gemm" + profile() + " --m 0 --n 1 --k 1") == 2);
  CHECK(run("cost gemm" + profile() + " --m 1 --n 1") == 2);
  CHECK(run("cost gemm" + profile() + " --m 1 --n 1 --k 1 --model roofline") == 2);
  CHECK(run("cost grouped-gemm" + profile() + " --experts 4 --tokens 16 --top-k 8 --n 8 --k 8") == 2);
  CHECK(run("cost grouped-gemm" + profile() + " --n 8 --k 8") == 2);
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --kv-heads 8") == 0);
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --kv-heads 5") == 2);
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --window 128 --no-causal") == 2);
  CHECK(run("cost ep" + profile() + " --bytes 1GiB --ranks 8 --ranks-per-node 3 --top-k 4 --experts 64") == 2);
  CHECK(run("cost") == 2);
}

TEST_CASE("moesim cost ep lists a transport the profile has no numbers for, and stops on a bad request", "[unit]") {
  test::TempDir dir;
  const std::string h200 = " --profile " + test::source_path("hardware_profiles/h200-hgx.json");
  const std::string out = dir.path("ep.json");
  REQUIRE(run("cost ep" + h200 + " --bytes 1GiB --ranks 8 --top-k 4 --experts 64 --json " + out) == 0);
  const auto rows = nlohmann::json::parse(slurp(out))["transports"];
  std::set<std::string> unavailable;
  for (const auto& row : rows) {
    if (row.contains("unavailable")) unavailable.insert(row["transport"].get<std::string>());
  }
  CHECK(unavailable == std::set<std::string>{"deepep"});  // the H200 profile has no DeepEP numbers
  // The all-gather dispatcher moves the rank's tokens (1 GiB of top-4 rows: 256 MiB) to the 7 others.
  const auto gather =
      std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r["transport"] == "nccl_all_gather"; });
  REQUIRE(gather != rows.end());
  CHECK((*gather)["nvlink_bytes_per_rank"].get<double>() == Approx(7.0 * 256 * 1024 * 1024));
  // A ragged group is the request's fault on any profile: exit 2, no listing.
  CHECK(run("cost ep" + h200 + " --bytes 1GiB --ranks 8 --ranks-per-node 3 --top-k 4 --experts 64 --json " +
            dir.path("bad.json")) == 2);
  CHECK_FALSE(std::ifstream(dir.path("bad.json")).good());
}

TEST_CASE("a number out of its one-sided range names the option and what is allowed", "[unit]") {
  test::TempDir dir;
  const std::string err = dir.path("err.txt");
  const auto message = [&](const std::string& args) {
    const std::string cmd = std::string(MOESIM_CLI) + " " + args + " >/dev/null 2>" + err;
    const int status = std::system(cmd.c_str());
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 2));
    return slurp(err);
  };
  // CLI11's own check printed "Value 0 not in range 0.000000 to 179769313486231570...".
  CHECK(message("cost gemm" + profile() + " --m 0 --n 1 --k 1")
            .find("--m: value 0 is not allowed; allowed: a finite "
                  "number > 0") != std::string::npos);
  CHECK(message("cost gemm" + profile() + " --m 1 --n inf --k 1").find("--n: value inf is not allowed") !=
        std::string::npos);
}

TEST_CASE("moesim cost --list names every registered model with a description and the key that chooses it", "[unit]") {
  test::TempDir dir;
  const std::string out = dir.path("models.json");
  REQUIRE(run("cost --list --json " + out) == 0);
  const auto families = nlohmann::json::parse(slurp(out));
  std::set<std::string> kinds;
  for (const auto& f : families) {
    kinds.insert(f["chosen_with"].get<std::string>());
    CHECK_FALSE(f["models"].empty());
    for (const auto& m : f["models"]) {
      INFO(m["name"]);
      CHECK(m["description"].get<std::string>().size() > 20);
    }
  }
  for (const char* key :
       {"cost_models.gemm", "cost_models.grouped_gemm", "cost_models.attention", "cost_models.memory",
        "cost_models.collective", "cost_models.resource_sharing", "flop_convention", "plan.optimizer.layout"}) {
    CHECK(kinds.count(key) == 1);
  }
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --kv-heads 8") == 0);
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --kv-heads 5") == 2);
  CHECK(run("cost attention" + profile() + " --seq-len 8192 --heads 32 --head-dim 128 --window 128 --no-causal") == 2);
  CHECK(run("cost ep" + profile() + " --bytes 1GiB --ranks 8 --ranks-per-node 3 --top-k 4 --experts 64") == 2);
  CHECK(run("cost") == 2);  // neither a kernel nor --list
}

TEST_CASE("A scenario chooses its cost models by name, the step JSON says which were used", "[unit]") {
  test::TempDir dir;
  nlohmann::json doc = test::inline_fig8_document("ddp-ep8");
  doc["cost_models"] = {{"gemm", "table"}, {"collective", "nccl"}, {"resource_sharing", "fair_share"}};
  const std::string scenario = dir.write("scenario.json", doc.dump());
  REQUIRE(run("simulate " + scenario + " --json " + dir.path("step.json")) == 0);
  const auto step = nlohmann::json::parse(slurp(dir.path("step.json")));
  CHECK(step["cost_models"] == nlohmann::json{{"gemm", "table"},
                                              {"grouped_gemm", "table"},
                                              {"attention", "flash"},
                                              {"memory", "hbm"},
                                              {"collective", "nccl"},
                                              {"resource_sharing", "fair_share"}});
  try {
    load_scenario(scenario, {"cost_models.gemm=roofline"});
    FAIL("accepted an unknown GEMM model");
  } catch (const InputError& e) {
    CHECK(e.file() == "--set");
    CHECK(e.path() == "cost_models.gemm");
    CHECK_THAT(e.message(), Catch::Contains("valid: table"));
  }
  doc["cost_models"] = {{"gemmm", "table"}};
  const std::string typo = dir.write("typo.json", doc.dump());
  try {
    load_scenario(typo, {});
    FAIL("accepted an unknown cost model kind");
  } catch (const InputError& e) {
    CHECK(e.path() == "cost_models.gemmm");
  }
  CHECK(run("simulate " + scenario + " --set cost_models.resource_sharing=max_min") == 2);
  // The policy is an input, refused when the scenario is composed, before any step is built.
  try {
    load_scenario(scenario, {"cost_models.resource_sharing=max_min"});
    FAIL("accepted an unknown resource-sharing policy");
  } catch (const InputError& e) {
    CHECK(e.file() == "--set");
    CHECK(e.path() == "cost_models.resource_sharing");
    CHECK_THAT(e.message(), Catch::Contains("valid: fair_share, sm_hbm_share"));
  }
  // The engine implements every policy a scenario may name, and no other.
  std::vector<std::string> policies;
  for (const ResourceSharingPolicy& p : kResourceSharingPolicies) policies.emplace_back(p.name);
  std::sort(policies.begin(), policies.end());
  CHECK(resource_sharing_models().names() == policies);
  for (const ResourceSharingPolicy& p : kResourceSharingPolicies)
    CHECK(resource_sharing_models().get(p.name).description() == p.description);
}
