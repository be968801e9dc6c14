// compute.fp8_gemm from calibrate/pytorch/fp8_gemm_bench.py's records: each record's BF16 over
// FP8 time, the median per x; both tables or none; an implausible ratio kept out.
#include <catch2/catch.hpp>

#include <string>

#include "calibrate/fit/fitter.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kBase = "hardware_profiles/h200-hgx.json";

json fp8_record(bool grouped, double x, double n, double ratio) {
  const double fp8_us = 100, bf16_us = ratio * fp8_us;
  json r = {{"kind", grouped ? "grouped_gemm_fp8" : "gemm_fp8"},
            {"group", "fp8"},
            {"label", grouped ? "rowwise" : "tensorwise"},
            {"dtype", "fp8_e4m3"},
            {"group_size", 1},
            {"iters", 3},
            {"warmup", 1},
            {"times_us", {fp8_us, fp8_us, fp8_us}},
            {"bf16_times_us", {bf16_us, bf16_us, bf16_us}},
            {"check", "ok"},
            {"check_rel_error", 0.0017},
            {"n", n},
            {"k", 4096},
            {"layout", "fwd"},
            {"scaling", grouped ? "rowwise" : "tensorwise"},
            {"flops", 1e12},
            {"ratio", ratio}};
  if (grouped) {
    r["m"] = "rows";
    r["method"] = "torch._scaled_grouped_mm / torch._grouped_mm";
    r["experts"] = 4;
    r["rows_per_expert"] = std::vector<double>(4, x);
  } else {
    r["m"] = x;
    r["library"] = "torch._scaled_mm";
  }
  return r;
}

json base() { return json::parse(test::slurp(test::source_path(kBase))); }

// A record of another kind, so that a fit leaving fp8_gemm out still writes a profile.
json attention_record() {
  const double flops = 4.0 * 4096 * 4096 * 0.5 * 32 * 128 * 4;
  return {{"kind", "attention"}, {"group", "attention"}, {"label", "cudnn"},
          {"dtype", "bf16"},     {"group_size", 1},      {"times_us", json::array({flops / 5e8})},
          {"check", "ok"},       {"pass", "forward"},    {"backend", "cudnn"},
          {"causal", true},      {"flops", flops},       {"sequences", 4},
          {"seq_len", 4096},     {"heads", 32},          {"kv_heads", 8},
          {"head_dim", 128}};
}

fit::FitResult fit_with(const json& records, test::TempDir& dir) {
  json doc = {{"schema", "moesim-measurements/1"},
              {"status", "complete"},
              {"environment", {{"date_utc", "2026-12-04T00:00:00Z"}, {"device", {{"name", "NVIDIA H200"}}}}},
              {"measurements", records}};
  return fit::fit_profile({dir.write("fp8.json", doc.dump())}, test::source_path(kBase), {});
}
}  // namespace

TEST_CASE("the FP8 tables are the BF16 over FP8 time, the median per rows", "[unit]") {
  test::TempDir dir;
  json records = json::array();
  for (double m : {256.0, 4096.0}) {
    records.push_back(fp8_record(false, m, 4096, m == 256 ? 1.2 : 1.7));
    records.push_back(fp8_record(false, m, 8192, m == 256 ? 1.3 : 1.9));
    records.push_back(fp8_record(false, m, 14336, m == 256 ? 1.25 : 2.2));  // past 2: BF16 under its own peak
  }
  records.push_back(fp8_record(false, 4096, 1024, 0.5));  // N under --gemm-min-nk: left out
  for (double rows : {128.0, 1024.0}) records.push_back(fp8_record(true, rows, 4096, rows == 128 ? 1.3 : 1.45));
  const auto r = fit_with(records, dir);
  const auto& f = r.profile["compute"]["fp8_gemm"];
  REQUIRE(f.contains("gemm_over_bf16_by_rows"));
  const auto& dense = f["gemm_over_bf16_by_rows"];
  CHECK(dense["kind"] == "fitted");
  CHECK(dense["points"][0]["rows"] == 256);
  CHECK(dense["points"][0]["ratio"].get<double>() == Approx(1.25));
  CHECK(dense["points"][1]["ratio"].get<double>() == Approx(1.9));
  const auto& grouped = f["grouped_gemm_over_bf16_by_rows_per_expert"];
  CHECK(grouped["points"][1]["rows_per_expert"] == 1024);
  CHECK(grouped["points"][1]["ratio"].get<double>() == Approx(1.45));
  CHECK(grouped["source"].get<std::string>().find("torch._scaled_grouped_mm") != std::string::npos);
}

TEST_CASE("an FP8 table is written with its partner or not at all", "[unit]") {
  test::TempDir dir;
  const auto only_dense = fit_with(json::array({fp8_record(false, 1024, 4096, 1.5), attention_record()}), dir);
  // The base's fp8_gemm section stays as it was.
  CHECK(only_dense.profile["compute"]["fp8_gemm"]["gemm_over_bf16_by_rows"]["source"] ==
        base()["compute"]["fp8_gemm"]["gemm_over_bf16_by_rows"]["source"]);
  std::string warnings;
  for (const auto& w : only_dense.warnings) warnings += w;
  CHECK(warnings.find("only the dense one") != std::string::npos);
  // A ratio past 3 is another kernel or another GPU: neither table is written.
  const auto odd = fit_with(
      json::array({fp8_record(false, 1024, 4096, 5.0), fp8_record(true, 512, 4096, 1.4), attention_record()}), dir);
  CHECK(odd.profile["compute"]["fp8_gemm"]["grouped_gemm_over_bf16_by_rows_per_expert"]["source"] ==
        base()["compute"]["fp8_gemm"]["grouped_gemm_over_bf16_by_rows_per_expert"]["source"]);
}
