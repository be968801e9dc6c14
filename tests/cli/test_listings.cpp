// What the terminal listings show and what the exit codes say: sweep and compare tables with a
// summary, simulate's exposed / busy / hidden split and an out-of-memory point's largest
// contributors, the inventory's header, and --fail-on-oom / all-invalid exit codes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include <sys/wait.h>

#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

struct Listing {
  int rc = -1;
  std::string out, err;
};

Listing run_listing(const test::TempDir& dir, const std::string& args) {
  const std::string out = dir.path("stdout.txt"), err = dir.path("stderr.txt");
  const std::string cmd = std::string(MOESIM_CLI) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Listing l{WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::slurp(out), test::slurp(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return l;
}

std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

bool has_line_starting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(start, 0) == 0) return true;
  }
  return false;
}

const std::string kDdp = test::source_path("scenarios/fig8/moe-ddp.json");

}  // namespace

TEST_CASE("sweep prints one row per point under a header, invalid reasons and a summary", "[unit]") {
  test::TempDir dir;
  const Listing l = run_listing(dir, "sweep " + kDdp +
                                         " --vary plan.expert_parallel.degree=1,3,8"
                                         " --vary architecture.moe.num_experts=32,128 -j 1");
  REQUIRE(l.rc == 0);
  INFO(l.out);
  CHECK(has_line_starting(l.out, "#  degree  num_experts  design"));
  // header + 6 rows + "invalid points:" + 2 reasons + 2 summary lines
  CHECK(count_lines(l.out) == 1 + 6 + 1 + 2 + 2);
  CHECK(l.out.find("EP-MP degree 3 does not divide the 32 routed experts") != std::string::npos);
  CHECK(l.out.find("6 point(s): 3 fit, 1 out of memory, 2 invalid\n") != std::string::npos);
  // DDP without EP at N=128 does not fit (its persistent state alone exceeds the device); the best
  // fitting point is DDP+EP8.
  CHECK(l.out.find(
            "best MFU that fits: #4 plan.expert_parallel.degree=8 architecture.moe.num_experts=32  ddp+ep8  MFU") !=
        std::string::npos);
}

TEST_CASE("a sweep or comparison with no valid point exits 2 and writes no report", "[unit]") {
  test::TempDir dir;
  const std::string out = dir.path("sweep.json");
  const Listing l = run_listing(dir, "sweep " + kDdp + " --vary plan.expert_parallel.degree=3,5 --json " + out);
  CHECK(l.rc == 2);
  CHECK(l.err.find("every point of the sweep is invalid (2)") != std::string::npos);
  CHECK(l.out.find("2 point(s): 0 fit, 0 out of memory, 2 invalid") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("Failing on OOM (--fail-on-oom) exits 3 on an out-of-memory point and 0 otherwise, with the reports written",
          "[unit]") {
  test::TempDir dir;
  const std::string oom = " --set architecture.moe.num_experts=128";
  for (const std::string cmd : {"simulate", "ledger"}) {
    INFO(cmd);
    const std::string out = dir.path(cmd + ".json");
    CHECK(run_listing(dir, cmd + " " + kDdp + oom + " --fail-on-oom --json " + out).rc == 3);
    CHECK(std::filesystem::exists(out));
    CHECK(run_listing(dir, cmd + " " + kDdp + oom + " --json " + out).rc == 0);
    CHECK(run_listing(dir, cmd + " " + kDdp + " --fail-on-oom").rc == 0);
  }
  CHECK(run_listing(dir, "sweep " + kDdp + " --vary architecture.moe.num_experts=32,128 --fail-on-oom").rc == 3);
  CHECK(run_listing(dir, "sweep " + kDdp + " --vary architecture.moe.num_experts=8,32 --fail-on-oom").rc == 0);
  CHECK(run_listing(dir, "compare " + kDdp + oom + " --design ddp --design ddp+ep8 --fail-on-oom").rc == 3);
}

TEST_CASE("simulate separates exposed, busy and hidden time, and names an OOM point's largest contributors", "[unit]") {
  test::TempDir dir;
  const Listing l =
      run_listing(dir, "simulate " + kDdp + " --set architecture.moe.num_experts=128 --json " + dir.path("step.json"));
  REQUIRE(l.rc == 0);
  INFO(l.out);
  const auto j = nlohmann::json::parse(test::slurp(dir.path("step.json")));
  const double busy = 1e3 * j["busy_by_kind_s"]["collective"].get<double>();
  const double exposed = 1e3 * j["time_by_kind_s"]["collective"].get<double>();
  REQUIRE(busy > exposed);
  char line[160];
  std::snprintf(line, sizeof line, "communication %.2f ms busy: %.2f ms exposed, %.2f ms hidden under other work", busy,
                exposed, busy - exposed);
  CHECK(l.out.find(line) != std::string::npos);
  CHECK(has_line_starting(l.out, "  by kind of task  exposed ms"));
  // DDP at N=128 peaks in the weight-rebuild phase: the gradient buckets lead, the rebuild
  // buffers follow, and the allocator's share is named.
  const auto at = l.out.find("largest contributors on stage 0 at the peak:");
  REQUIRE(at != std::string::npos);
  const auto grads = l.out.find("gradient buckets (persistent", at);
  const auto rebuild = l.out.find("coalesced all-gather buffers (working", at);
  CHECK(grads != std::string::npos);
  CHECK(rebuild != std::string::npos);
  CHECK(grads < rebuild);
  CHECK(l.out.find("allocator fragmentation (reserved - allocated)", at) != std::string::npos);
  // A point that fits lists no contributors.
  CHECK(run_listing(dir, "simulate " + kDdp).out.find("largest contributors") == std::string::npos);
}

TEST_CASE("inventory prints a header row", "[unit]") {
  test::TempDir dir;
  const Listing l = run_listing(dir, "inventory " + kDdp);
  REQUIRE(l.rc == 0);
  CHECK(has_line_starting(l.out, "tensor "));
  CHECK(l.out.find("class") != std::string::npos);
  CHECK(has_line_starting(l.out, "total 18.6745B params"));
}

TEST_CASE("sweep says which axis a --vary replaces: the scenario's or an earlier --vary of the same path", "[unit]") {
  test::TempDir dir;
  const std::string fig8b = test::source_path("scenarios/fig8/fig8b.json");
  const Listing file_axis = run_listing(dir, "sweep " + fig8b + " --vary architecture.moe.num_experts=8 -j 1");
  REQUIRE(file_axis.rc == 0);
  CHECK(file_axis.err.find("--vary architecture.moe.num_experts replaces the scenario's sweep axis") !=
        std::string::npos);
  const Listing twice = run_listing(dir, "sweep " + kDdp +
                                             " --vary architecture.moe.num_experts=8,16"
                                             " --vary architecture.moe.num_experts=8 -j 1");
  REQUIRE(twice.rc == 0);
  CHECK(twice.err.find("--vary architecture.moe.num_experts replaces an earlier --vary") != std::string::npos);
  CHECK(twice.out.find("1 point(s)") != std::string::npos);
}

TEST_CASE("an empty output path is refused with exit 2 before anything runs", "[unit]") {
  test::TempDir dir;
  for (const std::string option : {"--json", "--trace"}) {
    INFO(option);
    const Listing l = run_listing(dir, "simulate " + kDdp + " " + option + " ''");
    CHECK(l.rc == 2);
    CHECK(l.out.empty());
    CHECK(l.err.find(option + ": an empty path is not allowed; allowed: a file path or - for standard output") !=
          std::string::npos);
  }
  CHECK(run_listing(dir, "sweep " + kDdp + " --csv ''").rc == 2);
  CHECK(run_listing(dir, "ledger " + kDdp + " --json ''").rc == 2);
}

TEST_CASE("sweep's --trace and --trace-point each need the other (alone, either did nothing)", "[unit]") {
  test::TempDir dir;
  const std::string base = "sweep " + kDdp + " --vary plan.nodes=1,2 -j 1";
  const Listing trace_only = run_listing(dir, base + " --trace " + dir.path("t.json"));
  CHECK(trace_only.rc == 2);
  CHECK(trace_only.err.find("--trace requires --trace-point") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path("t.json")));
  CHECK(run_listing(dir, base + " --trace-point 1").rc == 2);
  CHECK(run_listing(dir, base + " --trace-point -1 --trace " + dir.path("t.json")).rc == 2);
  REQUIRE(run_listing(dir, base + " --trace-point 1 --trace " + dir.path("t.json")).rc == 0);
  CHECK(std::filesystem::file_size(dir.path("t.json")) > 0);
}

TEST_CASE("options that only shape another option need it: bench's plan-search options, validate's scenario",
          "[unit]") {
  test::TempDir dir;
  const Listing search = run_listing(dir, "bench " + kDdp + " --repeat 1 --search design=ddp");
  CHECK(search.rc == 2);
  CHECK(search.err.find("--search requires --plan-gpus") != std::string::npos);
  CHECK(run_listing(dir, "bench " + kDdp + " --repeat 1 -j 2").rc == 2);
  const Listing zero = run_listing(dir, "validate --sensitivity 0");  // scales nothing
  CHECK(zero.rc == 2);
  CHECK(zero.err.find("--sensitivity: value 0 is not allowed; allowed: a number > 0 and <= 0.9") != std::string::npos);
  CHECK(run_listing(dir, "validate --sensitivity 0.95").rc == 2);
  const Listing scenario = run_listing(dir, "validate --sensitivity-scenario " + kDdp);
  CHECK(scenario.rc == 2);
  CHECK(scenario.err.find("--sensitivity-scenario requires --sensitivity") != std::string::npos);
}

TEST_CASE("compare takes a design named twice once", "[unit]") {
  test::TempDir dir;
  const std::string json = dir.path("c.json");
  const Listing l =
      run_listing(dir, "compare " + kDdp + " --design ddp --design ddp+ep8 --design ddp -j 1 --json " + json);
  REQUIRE(l.rc == 0);
  CHECK(l.err.find("design ddp is named more than once; it is compared once") != std::string::npos);
  const auto doc = nlohmann::json::parse(test::slurp(json));
  CHECK(doc.at("designs").size() == 2);
}

TEST_CASE("a cost model's refusal names the cost command's option, not the model's field", "[unit]") {
  test::TempDir dir;
  const std::string h200 = " --profile " + test::source_path("hardware_profiles/h200-hgx.json");
  const Listing ep =
      run_listing(dir, "cost ep" + h200 + " --bytes 1GiB --ranks 8 --ranks-per-node 3 --top-k 4 --experts 64");
  CHECK(ep.rc == 2);
  CHECK(ep.err.find("moesim cost ep: --ranks-per-node: must divide ranks (8)") != std::string::npos);
  const Listing nvls =
      run_listing(dir, "cost collective" + h200 + " --kind all_gather --bytes 1GiB --ranks 8 --algorithm nvls");
  CHECK(nvls.rc == 2);
  CHECK(nvls.err.find("moesim cost collective: --algorithm: \"nvls\" cannot run all_gather") != std::string::npos);
}
