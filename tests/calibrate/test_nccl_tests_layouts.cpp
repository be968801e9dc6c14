// The importer on every nccl-tests layout (tests/calibrate/synthetic_nccl_logs.hpp writes them):
// the collective told from banners, binary and file names or the columns, several tests in one
// file, version lines, mpirun prefixes, 16 ranks, and the alltoall name.
#include <catch2/catch.hpp>

#include <set>

#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/nccl_tests_import.hpp"
#include "models/common/cost_types.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "tests/calibrate/synthetic_nccl_logs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using Spec = test::SyntheticNcclLog;

Spec spec(const std::string& binary, const std::string& layout, bool banner) {
  Spec s;
  s.binary = binary;
  s.layout = layout;
  s.banner = banner;
  return s;
}

std::vector<fit::NcclTestsLog> parse(const std::string& text, const std::string& name = "run.log",
                                     fit::NcclTestsOptions opts = {}) {
  return fit::parse_nccl_tests_log(text, name, opts);
}

fit::NcclTestsLog parse_one(const Spec& s, const std::string& name = "run.log") {
  const auto logs = parse(test::synthetic_nccl_log(s), name);
  REQUIRE(logs.size() == 1);
  return logs.front();
}

std::string error_of(const std::string& text, const std::string& name, fit::NcclTestsOptions opts = {}) {
  try {
    parse(text, name, opts);
  } catch (const InputError& e) {
    return e.file() + ": " + e.message();
  }
  return "";
}
}  // namespace

TEST_CASE("without a banner the columns tell the reductions, the old all_gather and the old alltoall", "[unit]") {
  struct Case {
    std::string binary, layout, kind, evidence;
  };
  const std::vector<Case> cases = {
      {"all_reduce_perf", "current", "all_reduce", "busbw = 1.75 x algbw"},
      {"all_reduce_perf", "2020", "all_reduce", "redop sum"},
      {"reduce_scatter_perf", "current", "reduce_scatter", "size = ranks x count x type size"},
      {"all_gather_perf", "2020", "all_gather", "no redop column"},  // before 2.13: no redop column
      {"alltoall_perf", "2020", "all_to_all", "redop column blank"},
      {"sendrecv_perf", "2020", "send_recv", "busbw = 1 x algbw"},
  };
  for (const auto& c : cases) {
    INFO(c.binary << " " << c.layout);
    const auto log = parse_one(spec(c.binary, c.layout, false));
    CHECK(log.kind == c.kind);
    CHECK(log.kind_from.rfind("columns: ", 0) == 0);
    CHECK(log.kind_from.find(c.evidence) != std::string::npos);
    CHECK(log.ranks == 8);
    CHECK(log.rows.size() >= 20);
  }
}

TEST_CASE("all_gather and alltoall share a layout: the file name decides, else a clear error", "[unit]") {
  for (const char* binary : {"all_gather_perf", "alltoall_perf"}) {
    const std::string text = test::synthetic_nccl_log(spec(binary, "current", false));
    const std::string err = error_of(text, "node7.log");
    INFO(err);
    CHECK(err.find("node7.log:1: cannot tell which collective node7.log measured") == 0);
    CHECK(err.find("redop none") != std::string::npos);
    CHECK(err.find("fit all_gather or all_to_all") != std::string::npos);
    CHECK(err.find("pass --kind all_gather or --kind all_to_all") != std::string::npos);
    CHECK(parse(text, "node7.log", {"all_gather", 0, ""}).front().kind_from == "--kind");
  }
  const std::string a2a = test::synthetic_nccl_log(spec("alltoall_perf", "current", false));
  CHECK(parse(a2a, "logs/alltoall_perf.txt").front().kind == "all_to_all");
  CHECK(parse(a2a, "logs/alltoall_perf.txt").front().kind_from == "file name");
  CHECK(parse(a2a, "all_to_all-16.log").front().kind == "all_to_all");
  const std::string ag = test::synthetic_nccl_log(spec("all_gather_perf", "current", false));
  CHECK(parse(ag, "all_gather.log").front().kind == "all_gather");
  CHECK(parse(ag, "allgather-run2.out").front().kind == "all_gather");
  // A file name the columns rule out is an error that says how to force it.
  const std::string err = error_of(ag, "all_reduce.log");
  CHECK(err.find("the file name says all_reduce but its columns") != std::string::npos);
  CHECK(err.find("pass --kind all_reduce") != std::string::npos);
  // alltoallv is not alltoall.
  CHECK(error_of(a2a, "alltoallv.log").find("cannot tell") != std::string::npos);
}

TEST_CASE("banners, echoed binaries and --kind: which wins, and what is refused", "[unit]") {
  auto s = spec("all_gather_perf", "current", true);
  auto log = parse_one(s);
  CHECK(log.kind == "all_gather");
  CHECK(log.kind_from == "banner");
  s.banner = false;
  s.command_line = true;
  log = parse_one(s, "all_reduce.log");  // the echoed command line beats the file name
  CHECK(log.kind == "all_gather");
  CHECK(log.kind_from == "binary name");
  // --kind against the columns is imported with a note for stderr.
  const auto forced =
      parse(test::synthetic_nccl_log(spec("all_reduce_perf", "current", false)), "x.log", {"reduce_scatter", 0, ""});
  CHECK(forced.front().kind == "reduce_scatter");
  REQUIRE(forced.front().notes.size() == 1);
  CHECK(forced.front().notes[0].find("imported as reduce_scatter as --kind says") != std::string::npos);
  // Rooted and other unsupported tests are refused by name.
  std::string bcast = test::synthetic_nccl_log(spec("all_reduce_perf", "current", true));
  bcast.replace(bcast.find("Collective test starting: all_reduce_perf"), 41,
                "Collective test starting: broadcast_perf");
  CHECK(error_of(bcast, "b.log").find("the banner names broadcast_perf") != std::string::npos);
}

TEST_CASE("a log of several tests run back to back splits into one sweep per test", "[unit]") {
  auto ar = spec("all_reduce_perf", "current", true);
  auto ag = spec("all_gather_perf", "current", true);
  auto old_ag = spec("all_gather_perf", "2020", false);
  auto rs = spec("reduce_scatter_perf", "current", false);
  ar.nccl_algo = "Ring";
  ag.nccl_version = "";
  ag.nccl_library_code = 22304;
  const std::string text = test::synthetic_nccl_log(ar) + test::synthetic_nccl_log(ag) +
                           test::synthetic_nccl_log(old_ag) + test::synthetic_nccl_log(rs);
  const auto logs = parse(text, "suite.log");
  REQUIRE(logs.size() == 4);
  CHECK(logs[0].kind == "all_reduce");
  CHECK(logs[0].algorithm == "ring");
  CHECK(logs[1].kind == "all_gather");
  CHECK(logs[1].algorithm.empty());  // NCCL_ALGO was printed for the first test only
  CHECK(logs[2].kind == "all_gather");
  CHECK(logs[2].kind_from == "columns: no redop column, size = ranks x count x type size, busbw = 0.875 x algbw");
  CHECK(logs[3].kind == "reduce_scatter");
  CHECK(logs[0].nccl_version == "2.21.5+cuda12.4");  // the NCCL INFO line: with its CUDA version
  CHECK(logs[0].nccl_library == "2.21.5");
  CHECK(logs[1].nccl_version == "2.23.4");  // nccl-library=22304 alone
  CHECK(logs[1].nccl_headers == "2.23.4");
  CHECK(logs[1].first_line > logs[0].rows.back().line);
  CHECK(logs[1].rows.front().line > logs[1].first_line);
  for (std::size_t i = 0; i < logs.size(); ++i) {
    CHECK(logs[i].test == static_cast<int>(i) + 1);
    CHECK(logs[i].tests == 4);
  }
  // The measurements file reads back: one sweep (label) per test, the versions in provenance.
  const auto doc = fit::nccl_tests_document(logs, {"moesim"});
  const auto f = fit::parse_measurements(nlohmann::json::parse(doc.dump()), "suite.json");
  std::set<std::string> labels;
  for (const auto& m : f.measurements) labels.insert(m.label);
  CHECK(labels == std::set<std::string>{"nccl-tests:suite.log#1", "nccl-tests:suite.log#2", "nccl-tests:suite.log#3",
                                        "nccl-tests:suite.log#4"});
  CHECK(doc["tool"]["source_logs"][1]["nccl_version"] == "2.23.4");
  CHECK(doc["tool"]["source_logs"][1]["test"] == 2);
  CHECK(f.environment.nccl_version == "2.21.5+cuda12.4");
}

TEST_CASE("mpirun prefixes and 16 ranks on two hosts, old error columns take the footer's verdict", "[unit]") {
  auto s = spec("alltoall_perf", "2020", false);
  s.prefix = "[1,0]<stdout>:";
  s.ranks = 16;
  s.hosts = 2;
  s.device = "NVIDIA H100 80GB HBM3";
  s.error_value = "2e-02";  // a deviation, not a count
  auto log = parse_one(s);
  CHECK(log.kind == "all_to_all");
  CHECK(log.ranks == 16);
  CHECK(log.hosts == std::vector<std::string>{"synth-0", "synth-1"});
  CHECK(log.device_name == "NVIDIA H100 80GB HBM3");
  CHECK(log.rows.front().check == "ok");  // "Out of bounds values : 0 OK"
  s.failed_footer = true;
  CHECK(parse_one(s).rows.front().check == "failed");
  s.prefix = "0: ";  // srun --label
  CHECK(parse_one(s).ranks == 16);
}

TEST_CASE("alltoall is all_to_all for the cost model, measurement files and the CLI", "[unit]") {
  CHECK(parse_collective_kind("alltoall") == CollectiveKind::all_to_all);
  test::TempDir dir;
  const std::string log = dir.write("a2a.log", test::synthetic_nccl_log(spec("alltoall_perf", "current", false)));
  const auto out = dir.path("a2a.json");
  REQUIRE(test::run_cli("import nccl-tests " + log + " --kind alltoall -o " + out) == 0);
  auto doc = read_json_file(out);
  CHECK(doc["measurements"][0]["kind"] == "all_to_all");
  for (auto& m : doc["measurements"]) m["kind"] = "alltoall";
  const auto f = fit::parse_measurements(doc, "alltoall.json");
  CHECK(f.measurements.front().kind == "all_to_all");
  CHECK(test::run_cli("cost collective --profile " + test::source_path("hardware_profiles/h200-hgx.json") +
                      " --kind alltoall --bytes 64MiB --ranks 8") == 0);
  CHECK(fit::nccl_version_text(2708) == "2.7.8");  // nccl.h's pre-2.9 code
  CHECK(fit::nccl_version_text(22105) == "2.21.5");
}
