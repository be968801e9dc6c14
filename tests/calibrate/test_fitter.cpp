// The fitter recovers known parameters from synthetic measurements with seeded noise.
// Tolerances: bandwidths and efficiencies within 2%, latencies within 10%, tables within 2%.
#include <catch2/catch.hpp>

#include <cmath>

#include "calibrate/fit/fitter.hpp"
#include "calibrate/fit/least_squares.hpp"
#include "models/common/json_reader.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kBase = "hardware_profiles/b300-hgx.json";

double value_at(const nlohmann::ordered_json& p, std::initializer_list<const char*> path) {
  const nlohmann::ordered_json* node = &p;
  for (const char* k : path) node = &node->at(k);
  REQUIRE(node->at("kind") == "fitted");
  return node->at("value").get<double>();
}

struct Fitted {
  test::TempDir dir;
  std::vector<std::string> files;
  fit::FitResult result;
  explicit Fitted(fit::FitOptions opts, const test::SyntheticTruth& t = {}, std::uint64_t seed = 42) {
    files = {dir.write("node.json", test::synthetic_node_measurements(t, seed).dump()),
             dir.write("two.json", test::synthetic_two_node_measurements(t, seed + 1).dump())};
    result = fit::fit_profile(files, test::source_path(kBase), opts);
  }
};
}  // namespace

TEST_CASE("weighted line fit recovers latency and bandwidth from noisy sizes", "[unit]") {
  std::vector<double> x, t;
  for (double s = 1024; s <= 4.0 * (1 << 30); s *= 2) {
    x.push_back(s);
    t.push_back((20.0 + s / 400e3) * (1 + 0.01 * std::sin(s)));  // +-1% deterministic wobble
  }
  const auto f = fit::fit_line_relative(x, t);
  CHECK(f.intercept == Approx(20.0).epsilon(0.10));
  CHECK(1e-3 / f.slope == Approx(400.0).epsilon(0.02));
  CHECK(f.max_rel < 0.03);
  CHECK_THROWS(fit::fit_line_relative({1, 1}, {2, 3}));
}

TEST_CASE("fit recovers collective efficiencies, latencies and NIC figures", "[unit]") {
  const test::SyntheticTruth truth;
  fit::FitOptions opts;
  opts.all_reduce_algorithm = "ring";
  Fitted f(opts, truth);
  const auto& p = f.result.profile;
  for (const auto& [kind, eff] : truth.efficiency) {
    const char* alg = kind == "all_to_all" ? "p2p" : "ring";
    INFO(kind);
    CHECK(value_at(p, {"interconnect", "intra_node", alg, "busbw_efficiency", kind.c_str()}) ==
          Approx(eff).epsilon(0.02));
  }
  CHECK(value_at(p, {"interconnect", "intra_node", "ring", "base_latency_us"}) ==
        Approx(truth.ring_base_us).epsilon(0.10));
  CHECK(value_at(p, {"interconnect", "intra_node", "p2p", "base_latency_us"}) ==
        Approx(truth.p2p_base_us).epsilon(0.10));
  CHECK(value_at(p, {"interconnect", "inter_node", "nic_efficiency"}) == Approx(truth.nic_efficiency).epsilon(0.02));
  CHECK(value_at(p, {"interconnect", "inter_node", "hop_latency_us"}) == Approx(truth.net_hop_us).epsilon(0.10));
  // Untouched fields keep their base provenance; sources name file, device, date and residual.
  CHECK(p["interconnect"]["intra_node"]["tree"]["busbw_efficiency"]["all_reduce"]["kind"] == "assumption");
  const std::string src = p["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["source"];
  CHECK(src.find("node.json (NVIDIA B300 SXM (SYNTHETIC test data), 2000-01-01T00:00:00Z)") != std::string::npos);
  CHECK(src.find("residual rms") != std::string::npos);
}

TEST_CASE("fit recovers the GEMM table, grouped efficiency, HBM and interference", "[unit]") {
  const test::SyntheticTruth truth;
  Fitted f({}, truth);
  const auto& c = f.result.profile["compute"];
  const auto& pts = c["gemm_bf16_TFLOPs_by_rows"]["points"];
  REQUIRE(pts.size() == truth.gemm_TFLOPs.size());
  std::size_t i = 0;
  for (const auto& [m, rate] : truth.gemm_TFLOPs) {
    CHECK(pts[i]["rows"].get<double>() == m);
    CHECK(pts[i]["TFLOPs"].get<double>() == Approx(rate).epsilon(0.02));
    ++i;
  }
  CHECK(c["gemm_bf16_TFLOPs_by_rows"]["kind"] == "fitted");
  const auto& g = c["grouped_gemm_efficiency_by_rows_per_expert"]["points"];
  REQUIRE(g.size() == truth.grouped_efficiency.size());
  i = 0;
  for (const auto& [x, eff] : truth.grouped_efficiency) {
    CHECK(g[i]["rows_per_expert"].get<double>() == x);
    CHECK(g[i]["fraction_of_dense"].get<double>() == Approx(eff).epsilon(0.02));
    ++i;
  }
  CHECK(value_at(f.result.profile, {"compute", "hbm_sustained_GBps"}) == Approx(truth.hbm_GBps).epsilon(0.02));
  const double slow = value_at(f.result.profile, {"interference", "compute_slowdown_with_comm"});
  CHECK(slow == Approx(0.5 * (truth.slowdown_all_reduce + truth.slowdown_all_to_all)).epsilon(0.10));
  // Without a recorded algorithm, all_reduce goes to what the cost model picks on the base
  // profile for its largest size: NVLS on a B300 node (the synthetic curve's 0.80 lands there).
  CHECK(f.result.profile["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["kind"] ==
        "published");
  CHECK(value_at(f.result.profile, {"interconnect", "intra_node", "nvls", "busbw_efficiency", "all_reduce"}) ==
        Approx(truth.efficiency.at("all_reduce")).epsilon(0.02));
  const std::string table = fit::format_fit_table(f.result);
  CHECK(table.find("all_reduce nvls* n=8") != std::string::npos);
  CHECK(table.find("the cost model's pick") != std::string::npos);
}

TEST_CASE("fit output is deterministic and loads as a profile", "[unit]") {
  fit::FitOptions opts;
  opts.all_reduce_algorithm = "ring";
  Fitted a(opts);
  CHECK(a.result.profile.dump() == fit::fit_profile(a.files, test::source_path(kBase), opts).profile.dump());
  const nlohmann::json plain = nlohmann::json::parse(a.result.profile.dump());
  const auto hw = parse_hardware_profile(JsonReader(plain, "fitted.json", ""));
  CHECK(hw.compute.gemm_bf16_TFLOPs_by_rows.kind == SourceKind::fitted);
  CHECK(hw.name == "b300-hgx");
}

TEST_CASE("GEMM rates above the datasheet peak and HBM rates far under it are not written", "[unit]") {
  test::SyntheticTruth truth;
  for (auto& [m, rate] : truth.gemm_TFLOPs) rate *= 2;  // 2840 TFLOP/s at best: over B300's 2250 peak
  truth.hbm_GBps = 400;                                 // 0.05 of B300's 8000 GB/s
  fit::FitOptions opts;
  opts.all_reduce_algorithm = "ring";
  Fitted f(opts, truth);
  const auto& c = f.result.profile["compute"];
  CHECK(c["gemm_bf16_TFLOPs_by_rows"]["kind"] != "fitted");
  CHECK(c["hbm_sustained_GBps"]["kind"] != "fitted");
  std::string warnings;
  for (const auto& w : f.result.warnings) warnings += w + "\n";
  INFO(warnings);
  CHECK(warnings.find("gemm TFLOPs by rows (N,K >= 4096), best: ") != std::string::npos);
  CHECK(warnings.find("of the datasheet 2250 (above it) of b300-hgx: implausible") != std::string::npos);
  CHECK(warnings.find("of the datasheet 8000 (under 0.1 of it) of b300-hgx: implausible") != std::string::npos);
  const std::string table = fit::format_fit_table(f.result);
  CHECK(table.find("(not mapped: 28") != std::string::npos);
  // The collectives are still fitted.
  CHECK(f.result.profile["interconnect"]["intra_node"]["ring"]["busbw_efficiency"]["all_reduce"]["kind"] == "fitted");
}

TEST_CASE("fit recovers the per-pass GEMM ratios and the memory-kernel fractions", "[unit]") {
  const test::SyntheticTruth truth;
  Fitted f({}, truth);
  const auto& p = f.result.profile;
  CHECK(value_at(p, {"compute", "gemm_dgrad_over_forward"}) == Approx(truth.dense_dgrad_ratio).epsilon(0.02));
  CHECK(value_at(p, {"compute", "gemm_wgrad_over_forward"}) == Approx(truth.dense_wgrad_ratio).epsilon(0.02));
  for (const auto& [field, ratios] :
       {std::pair{"grouped_gemm_dgrad_over_forward_by_rows_per_expert", truth.grouped_dgrad_ratio},
        {"grouped_gemm_wgrad_over_forward_by_rows_per_expert", truth.grouped_wgrad_ratio}}) {
    INFO(field);
    const auto& table = p["compute"][field];
    CHECK(table["kind"] == "fitted");
    REQUIRE(table["points"].size() == ratios.size());
    std::size_t i = 0;
    for (const auto& [x, ratio] : ratios) {
      CHECK(table["points"][i]["rows_per_expert"].get<double>() == x);
      CHECK(table["points"][i]["fraction_of_forward"].get<double>() == Approx(ratio).epsilon(0.02));
      ++i;
    }
  }
  // Each class from its own kernel where the file has one (cast over accumulation, multi-tensor
  // over flat AdamW); the copy rate stays the streaming kernels' best.
  const auto fraction = [&](const char* cls) { return value_at(p, {"compute", "hbm_fraction_by_kernel", cls}); };
  CHECK(fraction("elementwise") == Approx(truth.cast_fraction).epsilon(0.02));
  CHECK(fraction("permute") == Approx(truth.permute_fraction).epsilon(0.02));
  CHECK(fraction("cross_entropy") == Approx(truth.softmax_fraction).epsilon(0.02));
  CHECK(fraction("optimizer") == Approx(truth.multi_tensor_fraction).epsilon(0.02));
  CHECK(value_at(p, {"compute", "hbm_sustained_GBps"}) == Approx(truth.hbm_GBps).epsilon(0.02));
  const std::string table = fit::format_fit_table(f.result);
  INFO(table);
  CHECK(table.find("gemm dgrad / forward (M,N,K >= 4096)") != std::string::npos);
  CHECK(table.find("grouped GEMM wgrad / forward by rows per expert") != std::string::npos);
  CHECK(table.find("hbm fraction optimizer") != std::string::npos);
  CHECK(table.find("adamw_fp32_multi_tensor max ") != std::string::npos);
}
