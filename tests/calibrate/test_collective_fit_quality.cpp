// Collective fits that must be right at both ends of a full 8 B .. 8 GiB sweep and land on the
// algorithm the cost model runs, so that `moesim cost collective` on the fitted profile gives the
// log's large-message time back; and fits refused for another GPU or an implausible efficiency.
#include <catch2/catch.hpp>

#include <filesystem>

#include "calibrate/fit/fit_check.hpp"
#include "calibrate/fit/fitter.hpp"
#include "calibrate/fit/least_squares.hpp"
#include "calibrate/fit/nccl_tests_import.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "tests/calibrate/synthetic_nccl_logs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using Spec = test::SyntheticNcclLog;

// Default NCCL on one H200 node: LL at small sizes (12 us, 80 GB/s busbw), NVLS at large ones
// (25 us, 470 GB/s busbw, what nccl-tests issue 272 reports for 8 x H200); no NCCL_ALGO line.
Spec h200_default_all_reduce() {
  Spec s;
  s.latency_us = 25, s.busbw_GBps = 470;
  s.ll_latency_us = 12, s.ll_busbw_GBps = 80;
  return s;
}

// Writes the log, imports and fits it with the CLI; returns the fitted profile's path.
std::string import_and_fit(test::TempDir& dir, const Spec& s, const std::string& base, const std::string& extra = "") {
  const auto log = dir.write("all_reduce.log", test::synthetic_nccl_log(s));
  const auto imported = dir.path("imported.json"), fitted = dir.path("fitted.json");
  REQUIRE(test::run_cli("import nccl-tests " + log + " -o " + imported) == 0);
  REQUIRE(test::run_cli("fit " + imported + " --base " + test::source_path(base) + extra + " -o " + fitted) == 0);
  return fitted;
}

// `moesim cost collective` on a profile: {algorithm, time_us}.
std::pair<std::string, double> cli_cost(test::TempDir& dir, const std::string& profile, double bytes, int ranks) {
  const auto out = dir.path("cost.json");
  REQUIRE(test::run_cli("cost collective --profile " + profile + " --kind all_reduce --bytes " +
                        std::to_string(static_cast<long long>(bytes)) + " --ranks " + std::to_string(ranks) +
                        " --json " + out) == 0);
  const auto j = read_json_file(out);
  return {j["result"]["algorithm"].get<std::string>(), j["result"]["time_us"].get<double>()};
}

double busbw_of(const fit::LineFit& f, double bytes, double factor) {
  return bytes / (f.intercept + f.slope * bytes) * 1e-3 * factor;
}
}  // namespace

TEST_CASE("a full sweep's latency comes from its small sizes and its bandwidth from its large ones", "[unit]") {
  const Spec s = h200_default_all_reduce();
  std::vector<double> x, t;
  for (double b = 8; b <= s.max_bytes; b *= 2) x.push_back(b), t.push_back(test::synthetic_nccl_time_us(s, b));
  const double factor = 2.0 * 7 / 8, big = x.back();
  const auto f = fit::fit_latency_bandwidth(x, t);
  CHECK(f.intercept == Approx(s.ll_latency_us).epsilon(0.01));
  CHECK(busbw_of(f, big, factor) == Approx(s.busbw_GBps).epsilon(0.005));
  CHECK(f.bandwidth_points >= 3);
  CHECK(f.latency_points >= 10);
  // One relative line over every row (the fit before) misses the large-message busbw by far.
  const auto line = fit::fit_line_relative(x, t);
  CHECK(busbw_of(line, big, factor) < 0.95 * s.busbw_GBps);
  // A sweep that never leaves one regime is one line; a pure line is recovered exactly.
  std::vector<double> lt;
  for (double b : x) lt.push_back(20 + b / 300e3);
  const auto exact = fit::fit_latency_bandwidth(x, lt);
  CHECK(exact.intercept == Approx(20).epsilon(1e-3));
  CHECK(1e-3 / exact.slope == Approx(300).epsilon(1e-3));
  CHECK(exact.max_rel < 1e-3);
}

TEST_CASE("an unpinned all_reduce log fits the algorithm the cost model picks, and cost gives it back", "[unit]") {
  test::TempDir dir;
  const Spec s = h200_default_all_reduce();
  const auto fitted = import_and_fit(dir, s, "hardware_profiles/h200-hgx.json");
  const auto p = read_json_file(fitted);
  const auto& nvls = p["interconnect"]["intra_node"]["nvls"];
  CHECK(nvls["busbw_efficiency"]["all_reduce"]["kind"] == "fitted");
  CHECK(nvls["busbw_efficiency"]["all_reduce"]["value"].get<double>() == Approx(470.0 / 450).epsilon(0.005));
  CHECK(nvls["base_latency_us"]["value"].get<double>() == Approx(s.ll_latency_us).epsilon(0.02));
  CHECK(p["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["kind"] != "fitted");
  const std::string src = nvls["busbw_efficiency"]["all_reduce"]["source"];
  CHECK(src.find("bandwidth-bound rows") != std::string::npos);
  CHECK(src.find("at the largest size") != std::string::npos);
  const auto [alg, us] = cli_cost(dir, fitted, s.max_bytes, 8);
  CHECK(alg == "nvls");
  CHECK(us == Approx(test::synthetic_nccl_time_us(s, s.max_bytes)).epsilon(0.005));
  const auto [small_alg, small_us] = cli_cost(dir, fitted, 8, 8);
  CHECK(small_us == Approx(test::synthetic_nccl_time_us(s, 8)).epsilon(0.02));
  (void)small_alg;
}

TEST_CASE("a two-node H100 log without NCCL_ALGO fits NVLS-tree's NIC share and cost gives it back", "[unit]") {
  test::TempDir dir;
  Spec s;
  s.ranks = 16, s.hosts = 2;
  s.device = "NVIDIA H100 80GB HBM3";
  s.latency_us = 60, s.busbw_GBps = 339;  // a 2-node H100 large-message busbw (calibrate/README.md)
  s.ll_latency_us = 30, s.ll_busbw_GBps = 40;
  const auto fitted = import_and_fit(dir, s, "hardware_profiles/h100-hgx.json");
  const auto p = read_json_file(fitted);
  CHECK(p["interconnect"]["inter_node"]["nic_efficiency"]["kind"] == "fitted");
  const std::string src = p["interconnect"]["inter_node"]["nic_efficiency"]["source"];
  CHECK(src.find("nvls_tree") != std::string::npos);
  const auto [alg, us] = cli_cost(dir, fitted, s.max_bytes, 16);
  CHECK(alg == "nvls_tree");
  CHECK(us == Approx(test::synthetic_nccl_time_us(s, s.max_bytes)).epsilon(0.01));
}

TEST_CASE("a log pinned to Ring fits ring, which cost reproduces when asked for ring", "[unit]") {
  test::TempDir dir;
  Spec s;
  s.nccl_algo = "Ring";
  s.latency_us = 8.4 + 14 * 3.4 + 4;  // the ring's steps x hop plus a 12.4 us base
  s.busbw_GBps = 360;
  const auto fitted = import_and_fit(dir, s, "hardware_profiles/h200-hgx.json");
  const auto p = read_json_file(fitted);
  CHECK(p["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["value"].get<double>() ==
        Approx(0.8).epsilon(0.005));
  CHECK(p["interconnect"]["intra_node"]["ring"]["base_latency_us"]["value"].get<double>() ==
        Approx(12.4).epsilon(0.02));
  const auto out = dir.path("ring.json");
  REQUIRE(test::run_cli("cost collective --profile " + fitted + " --kind all_reduce --bytes 8GiB --ranks 8 " +
                        "--algorithm ring --json " + out) == 0);
  CHECK(read_json_file(out)["result"]["time_us"].get<double>() ==
        Approx(test::synthetic_nccl_time_us(s, s.max_bytes)).epsilon(0.005));
}

TEST_CASE("fit refuses another GPU's measurements unless --force-device", "[unit]") {
  CHECK(fit::same_gpu("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"));
  CHECK(fit::same_gpu("NVIDIA H200", "NVIDIA H200 SXM"));
  CHECK(fit::same_gpu("NVIDIA GB200", "NVIDIA GB200 (Blackwell GPU)"));
  CHECK_FALSE(fit::same_gpu("NVIDIA A100-SXM4-80GB", "NVIDIA H100 SXM"));
  CHECK_FALSE(fit::same_gpu("NVIDIA H200 NVL", "NVIDIA H200 SXM"));  // the PCIe board
  CHECK_FALSE(fit::same_gpu("NVIDIA GeForce GTX 1080", "NVIDIA H200 SXM"));
  CHECK(fit::gpu_identity("NVIDIA A100-SXM4-80GB").code == "A100");
  test::TempDir dir;
  Spec s;
  s.device = "NVIDIA A100-SXM4-80GB";
  s.nccl_algo = "Ring";
  s.busbw_GBps = 230;
  const auto log = dir.write("ar.log", test::synthetic_nccl_log(s));
  const auto imported = dir.path("a100.json"), out = dir.path("h100.json");
  REQUIRE(test::run_cli("import nccl-tests " + log + " -o " + imported) == 0);
  const std::string base = test::source_path("hardware_profiles/h100-hgx.json");
  try {
    fit::fit_profile({imported}, base, {});
    FAIL("a device mismatch was accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == imported);
    CHECK(e.path() == "environment.device.name");
    CHECK(e.message().find("\"NVIDIA A100-SXM4-80GB\" (A100)") != std::string::npos);
    CHECK(e.message().find("\"NVIDIA H100 SXM\" (H100)") != std::string::npos);
    CHECK(e.message().find("--force-device") != std::string::npos);
  }
  CHECK(test::run_cli("fit " + imported + " --base " + base + " -o " + out) == 2);
  CHECK_FALSE(std::filesystem::exists(out));
  fit::FitOptions force;
  force.force_device = true;
  const auto r = fit::fit_profile({imported}, base, force);
  REQUIRE_FALSE(r.warnings.empty());
  CHECK(r.warnings.front().find("fitted anyway (--force-device)") != std::string::npos);
  CHECK(test::run_cli("fit " + imported + " --base " + base + " --force-device -o " + out) == 0);
}

TEST_CASE("an efficiency far under the datasheet link is refused even with --force-device", "[unit]") {
  test::TempDir dir;
  Spec s;  // a PCIe desktop card: 0.72 GB/s busbw, 0.0016 of H200's NVLink
  s.device = "NVIDIA GeForce GTX 1080";
  s.nccl_algo = "Ring";
  s.latency_us = 50, s.busbw_GBps = 0.72;
  s.max_bytes = 1 << 30;
  const auto log = dir.write("ar.log", test::synthetic_nccl_log(s));
  const auto imported = dir.path("gtx.json");
  REQUIRE(test::run_cli("import nccl-tests " + log + " -o " + imported) == 0);
  fit::FitOptions force;
  force.force_device = true;
  const std::string base = test::source_path("hardware_profiles/h200-hgx.json");
  CHECK_THROWS_WITH(fit::fit_profile({imported}, base, force),
                    Catch::Contains("not mapped: efficiency 0.0016 is under 0.1 of the profile's NVLink rate"));
  CHECK(test::run_cli("fit " + imported + " --base " + base + " --force-device -o " + dir.path("x.json")) == 2);
  CHECK_FALSE(std::filesystem::exists(dir.path("x.json")));
}
