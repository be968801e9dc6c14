// nccl-tests logs (synthetic, tests/data/calibrate/) import into measurement files; malformed
// logs are rejected with FILE:LINE.
#include <catch2/catch.hpp>

#include "calibrate/fit/fitter.hpp"
#include "calibrate/fit/measurements.hpp"
#include "calibrate/fit/nccl_tests_import.hpp"
#include "models/common/errors.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kAllReduce = "tests/data/calibrate/synthetic-all_reduce_perf-8xh200.log";
const std::string kAllToAll = "tests/data/calibrate/synthetic-alltoall-2x8xh100.log";

const std::string kHeader =
    "#  Rank  0 Group  0 Pid 1 on host device  0 [0x01] GPU\n"
    "#  Rank  1 Group  0 Pid 2 on host device  1 [0x02] GPU\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
const std::string kRow1 =
    "        1024           256     float     sum      -1    10.00    0.10    0.10      0    10.00    0.10    0.10     "
    " 0\n";
const std::string kRow2 =
    "        2048           512     float     sum      -1    11.00    0.19    0.19      0    11.00    0.19    0.19     "
    " 0\n";

// The one test of a log file.
fit::NcclTestsLog one(const std::string& rel) {
  const auto tests = fit::read_nccl_tests_log(test::source_path(rel), {});
  REQUIRE(tests.size() == 1);
  return tests.front();
}

// The InputError's file ("bad.log:LINE") and message for a log text.
std::pair<std::string, std::string> failure(const std::string& text,
                                            fit::NcclTestsOptions opts = {"all_reduce", 0, ""}) {
  try {
    fit::parse_nccl_tests_log(text, "bad.log", opts);
  } catch (const InputError& e) {
    return {e.file(), e.message()};
  }
  return {"", ""};
}
}  // namespace

TEST_CASE("a current nccl-tests all_reduce log imports with its banner, ranks and NCCL_ALGO", "[unit]") {
  const auto log = one(kAllReduce);
  CHECK(log.kind == "all_reduce");
  CHECK(log.kind_from == "banner");
  CHECK(log.ranks == 8);
  CHECK(log.hosts == std::vector<std::string>{"synthetic-h200"});
  CHECK(log.device_name == "NVIDIA H200");
  CHECK(log.algorithm == "ring");
  CHECK(log.nccl_version == "2.21.5+cuda12.4");
  CHECK(log.iters == 20);
  CHECK(log.warmup == 5);
  REQUIRE(log.rows.size() == 21);
  CHECK(log.rows[0].line == 21);
  CHECK(log.rows[0].bytes == 1024);
  CHECK(log.rows[0].time_us == 23.94);
  CHECK(log.rows[0].dtype == "fp32");
  CHECK(log.rows[0].redop == "sum");
  CHECK(log.rows.back().bytes == (1LL << 30));
}

TEST_CASE("an older, mpirun-prefixed alltoall log imports from the binary name", "[unit]") {
  const auto log = one(kAllToAll);
  CHECK(log.kind == "all_to_all");
  CHECK(log.kind_from == "binary name");
  CHECK(log.ranks == 16);
  CHECK(log.hosts.size() == 2);
  CHECK(log.algorithm.empty());
  REQUIRE(log.rows.size() == 11);
  CHECK(log.rows[0].dtype == "bf16");
  CHECK(log.rows[0].redop.empty());
  CHECK(log.rows[0].wrong == 0);
  const auto doc = fit::nccl_tests_document({log}, {"moesim", "import"});
  const auto f = fit::parse_measurements(nlohmann::json::parse(doc.dump()), "a2a.json");
  REQUIRE(f.measurements.size() == 11);
  CHECK(f.measurements[0].nodes == 2);
  CHECK(f.measurements[0].source == test::source_path(kAllToAll) + ":27");
  CHECK(f.environment.date_utc == "unknown");
  CHECK(f.environment.device_name == "NVIDIA H100 80GB HBM3");
}

TEST_CASE("imported nccl-tests curves fit the profile's efficiencies", "[unit]") {
  test::TempDir dir;
  auto write_import = [&](const std::string& log, const std::string& name) {
    const auto parsed = fit::read_nccl_tests_log(test::source_path(log), {});
    return dir.write(name, fit::nccl_tests_document(parsed, {"moesim"}).dump());
  };
  const auto ar =
      fit::fit_profile({write_import(kAllReduce, "ar.json")}, test::source_path("hardware_profiles/h200-hgx.json"), {});
  // 360 GB/s busbw over 450 GB/s NVLink 4 (tests/data/calibrate/README.md).
  CHECK(ar.profile["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["value"].get<double>() ==
        Approx(0.8).epsilon(0.02));
  const auto a2a =
      fit::fit_profile({write_import(kAllToAll, "a2a.json")}, test::source_path("hardware_profiles/h100-hgx.json"), {});
  CHECK(a2a.profile["interconnect"]["inter_node"]["nic_efficiency"]["value"].get<double>() ==
        Approx(0.9).epsilon(0.02));
  CHECK(a2a.profile["interconnect"]["inter_node"]["nic_efficiency"]["kind"] == "fitted");
}

TEST_CASE("logs of different devices do not mix in one measurements file", "[unit]") {
  CHECK_THROWS_AS(fit::nccl_tests_document({one(kAllReduce), one(kAllToAll)}, {}), InputError);
}

TEST_CASE("malformed nccl-tests logs are rejected with file:line", "[unit]") {
  CHECK(failure(kHeader + kRow1 + kRow2).first.empty());
  CHECK(failure(kHeader + kRow1 +
                "        2048           512     float     sum      -1    abc    0.19    0.19      0\n") ==
        std::pair<std::string, std::string>{
            "bad.log:6", "column 6 (out-of-place time): expected a non-negative number, got \"abc\""});
  CHECK(failure(kHeader + "        1024           256     quad     sum      -1    10.00    0.10    0.10      0\n")
            .first == "bad.log:5");
  CHECK(failure(kHeader + "        1024           256     float     sum      -1    10.00\n").first == "bad.log:5");
  CHECK(failure(kHeader + kRow2 + kRow1).first == "bad.log:6");  // sizes go back
  CHECK(failure(kHeader + "        1024           256     float     sum      -1    -3.0    0.10    0.10      0\n")
            .first == "bad.log:5");
  CHECK(failure(kHeader).second.find("no nccl-tests result rows") != std::string::npos);
  CHECK(failure(kHeader + kRow1, {}).second.find("pass --kind") != std::string::npos);
  const std::string no_ranks = kHeader.substr(kHeader.find("#       size")) + kRow1;
  CHECK(failure(no_ranks).second.find("pass --ranks") != std::string::npos);
  CHECK(failure(no_ranks, {"all_reduce", 4, ""}).first.empty());
  CHECK(failure(kHeader + kRow1, {"all_reduce", 4, ""}).second.find("--ranks is 4") != std::string::npos);
  const std::string banner = "# Collective test starting: all_gather_perf\n";
  CHECK(failure(banner + kHeader + kRow1).second.find("banner says all_gather") != std::string::npos);
  CHECK(failure(banner + "# Collective test starting: alltoall_perf\n" + kHeader + kRow1, {}).second.find("several") !=
        std::string::npos);
}
