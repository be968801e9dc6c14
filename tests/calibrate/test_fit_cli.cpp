// `moesim fit` and `moesim import nccl-tests` as a user runs them: exit 0 and a loadable output,
// exit 2 for bad input and no output file at all.
#include <catch2/catch.hpp>

#include <filesystem>

#include "calibrate/fit/measurements.hpp"
#include "models/common/json_reader.hpp"
#include "models/input/scenario.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
std::string src(const std::string& rel) { return test::source_path(rel); }
bool exists(const std::string& p) { return std::filesystem::exists(p); }
}  // namespace

TEST_CASE("moesim fit writes a profile that loads", "[unit]") {
  test::TempDir dir;
  const auto m = dir.write("m.json", test::synthetic_node_measurements({}, 11).dump());
  const auto out = dir.path("fitted.json");
  const std::string base = " --base " + src("hardware_profiles/b300-hgx.json");
  REQUIRE(test::run_cli("fit " + m + base + " --all-reduce-algorithm ring -o " + out) == 0);
  const auto doc = read_json_file(out);
  const auto hw = parse_hardware_profile(JsonReader(doc, out, ""));
  CHECK(hw.compute.hbm_sustained_GBps.kind == SourceKind::fitted);
  CHECK(hw.interconnect.intra_node.ring.busbw_efficiency.all_reduce->kind == SourceKind::fitted);
  // The fitted profile drives the cost model like any other.
  CHECK(test::run_cli("cost collective --profile " + out + " --kind all_reduce --bytes 1GiB --ranks 8") == 0);
}

TEST_CASE("moesim fit rejects bad input with exit code 2 and writes nothing", "[unit]") {
  test::TempDir dir;
  auto doc = test::synthetic_node_measurements({}, 11);
  const auto good = dir.write("m.json", doc.dump());
  doc["measurements"][3]["times_us"][0] = -1;
  const auto bad = dir.write("bad.json", doc.dump());
  const auto out = dir.path("fitted.json");
  const std::string base = " --base " + src("hardware_profiles/b300-hgx.json");
  CHECK(test::run_cli("fit " + good + " -o " + out) == 2);  // --base is required
  CHECK(test::run_cli("fit " + good + " " + bad + base + " -o " + out) == 2);
  CHECK(test::run_cli("fit " + dir.path("missing.json") + base + " -o " + out) == 2);
  CHECK(test::run_cli("fit " + good + base + " --all-reduce-algorithm butterfly -o " + out) == 2);
  CHECK(test::run_cli("fit " + good + " --base " + good + " -o " + out) == 2);  // not a profile
  auto empty = test::synthetic_node_measurements({}, 11);
  empty["measurements"] = nlohmann::json::array();
  CHECK(test::run_cli("fit " + dir.write("empty.json", empty.dump()) + base + " -o " + out) == 2);
  CHECK_FALSE(exists(out));
}

TEST_CASE("moesim import nccl-tests: exit codes and no partial output", "[unit]") {
  test::TempDir dir;
  const std::string ar = src("tests/data/calibrate/synthetic-all_reduce_perf-8xh200.log");
  const std::string a2a = src("tests/data/calibrate/synthetic-alltoall-2x8xh100.log");
  const auto out = dir.path("imported.json");
  REQUIRE(test::run_cli("import nccl-tests " + ar + " -o " + out) == 0);
  const auto f = fit::read_measurements(out);
  CHECK(f.measurements.size() == 21);
  CHECK(f.measurements[0].algorithm == "ring");
  REQUIRE(test::run_cli("fit " + out + " --base " + src("hardware_profiles/h200-hgx.json") + " -o " +
                        dir.path("h200.json")) == 0);
  CHECK(exists(dir.path("h200.json")));

  const auto out2 = dir.path("second.json");
  const auto bad =
      dir.write("bad.log", "#  size count type redop root time algbw busbw #wrong\n  1024 256 float sum -1 x 1 1 0\n");
  CHECK(test::run_cli("import nccl-tests " + ar + " " + bad + " -o " + out2) == 2);  // one bad log: nothing written
  CHECK(test::run_cli("import nccl-tests " + ar + " " + a2a + " -o " + out2) == 2);  // two device types
  CHECK(test::run_cli("import nccl-tests " + dir.path("none.log") + " -o " + out2) == 2);
  CHECK(test::run_cli("import nccl-tests " + ar + " --kind allreduce -o " + out2) == 2);
  CHECK(test::run_cli("import nccl-tests " + ar) == 2);  // -o is required
  CHECK(test::run_cli("import") == 2);
  CHECK_FALSE(exists(out2));
  CHECK(test::run_cli("import nccl-tests " + a2a + " --kind all_to_all -o " + out2) == 0);
}
