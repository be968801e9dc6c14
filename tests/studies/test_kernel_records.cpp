// Kernel records of a validation dataset (kind "kernel", scenarios/validation/hardware.json): the
// rate the caller's pricer predicts against the measured one; studies/ prices nothing itself.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "studies/validation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
std::string dataset(test::TempDir& dir, const nlohmann::json& record) {
  const nlohmann::json doc = {{"name", "kernels"}, {"records", nlohmann::json::array({record})}};
  const std::string file = dir.path("kernels.json");
  std::ofstream(file) << doc.dump();
  return file;
}

nlohmann::json gemm_record(double measured) {
  return {{"id", "k"},
          {"kind", "kernel"},
          {"profile", "h100-hgx"},
          {"kernel", "gemm"},
          {"pass", "forward"},
          {"shape", {{"m", 8192}, {"n", 8192}, {"k", 8192}}},
          {"measured", {{"TFLOPs", measured}}},
          {"source", "test"}};
}
}  // namespace

TEST_CASE("A kernel record compares the pricer's rate with the measured one, within 10% by default", "[unit]") {
  test::TempDir dir;
  std::string seen_kernel, seen_profile;
  double seen_m = 0;
  const KernelPricer pricer = [&](const std::string& profile, const std::string& kernel, const std::string& pass,
                                  const JsonReader& shape) {
    seen_profile = profile;
    seen_kernel = kernel + " " + pass;
    seen_m = shape.number("m", Range::positive());
    shape.number("n", Range::positive());
    shape.number("k", Range::positive());
    shape.finish();
    return 700.0;
  };
  const ValidationReport near = validate_dataset(dataset(dir, gemm_record(660)), {}, pricer);
  REQUIRE(near.records.size() == 1);
  REQUIRE(near.records[0].checks.size() == 1);
  CHECK(near.records[0].checks[0].error == Approx(700.0 / 660 - 1));
  CHECK(near.records[0].checks[0].pass);
  CHECK(seen_kernel == "gemm forward");
  CHECK(seen_m == 8192);
  CHECK(seen_profile.ends_with("hardware_profiles/h100-hgx.json"));  // the bundled name, resolved
  const ValidationReport far = validate_dataset(dataset(dir, gemm_record(500)), {}, pricer);
  CHECK_FALSE(far.records[0].checks[0].pass);
  CHECK(far.failures() == 1);
  // Without a pricer the record is reported, not evaluated.
  const ValidationReport none = validate_dataset(dataset(dir, gemm_record(660)));
  CHECK(none.records[0].checks.empty());
  CHECK_THAT(none.records[0].error, Catch::Contains("moesim validate"));
  // An unknown profile names the record's key.
  nlohmann::json bad = gemm_record(660);
  bad["profile"] = "h100-hgxx";
  CHECK_THROWS_WITH(validate_dataset(dataset(dir, bad), {}, pricer),
                    Catch::Contains("records[0].profile") && Catch::Contains("h100-hgx"));
}

TEST_CASE("moesim validate prices the bundled kernel records with the profiles' cost models", "[unit]") {
  test::TempDir dir;
  const std::string out = dir.path("hw.json");
  REQUIRE(test::run_cli("validate " + test::source_path("scenarios/validation/hardware.json") + " --json " + out) == 0);
  std::ifstream in(out);
  const auto doc = nlohmann::json::parse(in);
  std::size_t evaluated = 0;
  for (const auto& r : doc.at("records")) evaluated += r.at("checks").size();
  CHECK(evaluated == doc.at("records").size());
}

TEST_CASE("moesim validate prices a GEMM record at the profile's table rate", "[unit]") {
  test::TempDir dir;
  // 8192^3 on H200: its fitted table gives 764.6 TFLOP/s at 8192 rows; the launch overhead is
  // 3 us of a 1.4 ms kernel.
  const std::string file = dataset(dir, [] {
    nlohmann::json r = gemm_record(764.6);
    r["profile"] = "h200-hgx";
    return r;
  }());
  const std::string out = dir.path("gemm.json");
  REQUIRE(test::run_cli("validate " + file + " --json " + out) == 0);
  std::ifstream in(out);
  const auto check = nlohmann::json::parse(in).at("records")[0].at("checks")[0];
  CHECK(check.at("predicted").get<double>() == Approx(764.6).epsilon(0.005));
}

TEST_CASE("moesim validate prices an EP dispatch record as the benchmarks' algorithm bandwidth", "[unit]") {
  test::TempDir dir;
  // HybridEP across 4 DGX H100 at 8 SMs: rows received (its own included) x 7168 x 2 B over the
  // call's time; the time is the NIC bytes at the profile's 0.884 of 50 GB/s, so by hand
  // 4096 x 32 x q_rank rows against 4096 x 3 x q_node rows on the rail.
  const nlohmann::json shape = {{"transport", "hybridep"}, {"ranks", 32}, {"ranks_per_node", 8}, {"tokens", 4096},
                                {"hidden", 7168},          {"top_k", 8},  {"experts", 256},      {"sms", 8}};
  const nlohmann::json record = {{"id", "ep"},
                                 {"kind", "kernel"},
                                 {"profile", "h100-hgx"},
                                 {"kernel", "ep_dispatch"},
                                 {"shape", shape},
                                 {"measured", {{"GBps", 121.3}}},
                                 {"source", "test"}};
  const std::string out = dir.path("ep.json");
  REQUIRE(test::run_cli("validate " + dataset(dir, record) + " --json " + out) == 0);
  std::ifstream in(out);
  const auto check = nlohmann::json::parse(in).at("records")[0].at("checks")[0];
  const double q_rank = 1 - std::pow(248.0 / 256, 8), q_node = 1 - std::pow(192.0 / 256, 8);  // near enough
  const double by_hand = 50 * 0.884 * 32 * q_rank / (3 * q_node);
  CHECK(check.at("predicted").get<double>() == Approx(by_hand).epsilon(0.02));
  // An EP record has no pass; one that names none of the transports is refused by its path.
  nlohmann::json bad = record;
  bad["shape"]["transport"] = "nvshmem";
  CHECK(test::run_cli("validate " + dataset(dir, bad)) == 2);
}

TEST_CASE("moesim validate prices an FP8 attention record at the profile's FP8 table", "[unit]") {
  test::TempDir dir;
  // GB200, the Llama 3.1 shape the table was read at (batch 2, 64 / 8 heads of 128, 4096 tokens):
  // the FP8 forward point, 1805 TFLOP/s, less the 3 us launch of a 0.3 ms kernel.
  const nlohmann::json shape = {{"sequences", 2}, {"seq_len", 4096}, {"heads", 64},
                                {"kv_heads", 8},  {"head_dim", 128}, {"precision", "fp8"}};
  const nlohmann::json record = {
      {"id", "fp8"},       {"kind", "kernel"}, {"profile", "gb200-nvl72"},       {"kernel", "attention"},
      {"pass", "forward"}, {"shape", shape},   {"measured", {{"TFLOPs", 1805}}}, {"source", "test"}};
  const std::string out = dir.path("fp8.json");
  REQUIRE(test::run_cli("validate " + dataset(dir, record) + " --json " + out) == 0);
  std::ifstream in(out);
  const auto check = nlohmann::json::parse(in).at("records")[0].at("checks")[0];
  CHECK(check.at("predicted").get<double>() == Approx(1805).epsilon(0.015));
  CHECK(check.at("predicted").get<double>() < 1805);
  // A profile without FP8 attention rates refuses the record.
  nlohmann::json b300 = record;
  b300["profile"] = "b300-hgx";
  CHECK(test::run_cli("validate " + dataset(dir, b300)) == 2);
}
