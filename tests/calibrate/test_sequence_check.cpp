// What a one-GPU calibration run brings to the fitter: block sequences (read strictly, priced on
// the fitted profile, never fitted), interference records on a one-rank communicator (reported,
// not fitted), and a memory class measured by two kernels (the faster sets elementwise; the
// optimizer keeps the workload's multi-tensor kernel).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "calibrate/fit/fitter.hpp"
#include "models/common/errors.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kBase = "hardware_profiles/b300-hgx.json";

json kernel(const std::string& name, const std::string& phase, const std::string& op, double us) {
  return {{"name", name}, {"phase", phase}, {"op", op}, {"median_us", us}};
}

// One MoE block's sequence whose kernels run exactly at the synthetic truth's rates: a forward
// GEMM at M = 8192 (N = K = 4096), a grouped GEMM of 32 experts x 2048 rows, a copy at the HBM
// rate, an accumulation at its fraction, and one kernel the budget left untimed.
json truth_sequence(const test::SyntheticTruth& t) {
  const double gemm_us = 2.0 * 8192 * 4096 * 4096 / (t.gemm_TFLOPs.at(8192) * 1e6);
  json gemm = kernel("attn_out_fwd", "forward", "gemm", gemm_us);
  gemm.update({{"m", 8192}, {"n", 4096}, {"k", 4096}, {"layout", "fwd"}});
  const double rows = 32 * 2048;  // the dense table clamps at its last point (32768 rows)
  const double grouped_us = 2.0 * rows * 4096 * 4096 / (t.grouped_efficiency.at(2048) * t.gemm_TFLOPs.at(32768) * 1e6);
  json grouped = kernel("expert_down_fwd", "forward", "grouped_gemm", grouped_us);
  grouped.update({{"m", "rows"}, {"n", 4096}, {"k", 4096}, {"layout", "fwd"}, {"method", "per_expert"}});
  const double bytes = 5.0 * (1 << 30);  // whole elements for both kernels (4 and 10 bytes each)
  json copy = kernel("permute_copy", "forward", "memcpy_d2d", bytes / (t.hbm_GBps * 1e3));
  copy.update({{"dtype", "bf16"}, {"elements", bytes / 4}, {"bytes", bytes}});
  json accum = kernel("grad_accum_bf16_to_fp32", "grad_accumulate", "grad_accum_bf16_to_fp32",
                      bytes / (t.accum_fraction * t.hbm_GBps * 1e3));
  accum.update({{"dtype", "bf16->fp32"}, {"elements", bytes / 10}, {"bytes", bytes}});
  json untimed = kernel("router_fwd", "forward", "gemm", 1);
  untimed.update({{"m", 8192}, {"n", 48}, {"k", 4096}, {"layout", "fwd"}, {"median_us", nullptr}});
  const json kernels = json::array({gemm, grouped, copy, untimed, accum});
  double sum = 0;
  for (const auto& k : kernels) sum += k["median_us"].is_null() ? 0.0 : k["median_us"].get<double>();
  return {{"kind", "sequence"},
          {"group", "sequence"},
          {"label", "moe_block"},
          {"dtype", "bf16"},
          {"group_size", 1},
          {"iters", 3},
          {"warmup", 1},
          {"times_us", {sum, sum, sum}},
          {"check", "ok"},
          {"block", "moe"},
          {"rows_per_expert", std::vector<int>(32, 2048)},
          {"kernels", kernels},
          {"kernels_sum_median_us", sum}};
}

fit::FitResult fit_doc(const json& doc, test::TempDir& dir) {
  return fit::fit_profile({dir.write("node.json", doc.dump())}, test::source_path(kBase), {});
}
}  // namespace

TEST_CASE("a block sequence is priced on the fitted profile, kernel by kernel", "[unit]") {
  test::TempDir dir;
  const test::SyntheticTruth truth;
  json doc = test::synthetic_node_measurements(truth, 11);
  doc["measurements"].push_back(truth_sequence(truth));
  const auto r = fit_doc(doc, dir);
  REQUIRE(r.sequences.size() == 1);
  const auto& c = r.sequences.front();
  CHECK(c.label == "moe_block");
  CHECK(c.untimed == 1);
  REQUIRE(c.phases.size() == 2);
  CHECK(c.phases[0].part == "forward");
  CHECK(c.phases[0].kernels == 3);
  // The fitted tables reproduce the truth's rates within the fit's noise and the launch overhead.
  for (const auto& p : c.phases) CHECK(p.model_us / p.measured_us == Approx(1.0).margin(0.04));
  for (const auto& p : c.ops) {
    INFO(p.part);
    CHECK(p.model_us / p.measured_us == Approx(1.0).margin(0.04));
  }
  CHECK(c.whole_us == Approx(c.kernels_sum_us));
  const std::string table = fit::format_fit_table(r);
  INFO(table);
  CHECK(table.find("grouped_gemm per_expert") != std::string::npos);
  CHECK(table.find("moe_block whole sequence") != std::string::npos);
  CHECK(table.find("(1 kernels untimed by the budget, left out)") != std::string::npos);
}

TEST_CASE("a sequence kernel with an unknown op is refused with its path", "[unit]") {
  test::TempDir dir;
  const test::SyntheticTruth truth;
  json doc = test::synthetic_node_measurements(truth, 11);
  json seq = truth_sequence(truth);
  seq["kernels"][2]["op"] = "flash_attention";
  doc["measurements"].push_back(seq);
  const std::size_t index = doc["measurements"].size() - 1;
  try {
    fit_doc(doc, dir);
    FAIL("an unknown sequence kernel op was accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("measurements[" + std::to_string(index) + "].kernels[2].op") != std::string::npos);
    CHECK(what.find("flash_attention") != std::string::npos);
  }
}

TEST_CASE("interference on a one-rank communicator is reported and not fitted", "[unit]") {
  test::TempDir dir;
  const test::SyntheticTruth truth;
  json doc = test::synthetic_node_measurements(truth, 11);
  for (auto& m : doc["measurements"]) {
    if (m["kind"] == "interference" || m["kind"] == "interference_comm") m["group_size"] = 1;
  }
  const auto r = fit_doc(doc, dir);
  CHECK(r.profile["interference"]["comm_slowdown_with_compute"]["kind"] != "fitted");
  CHECK(r.profile["interference"]["compute_slowdown_with_comm"]["kind"] != "fitted");
  const std::string table = fit::format_fit_table(r);
  INFO(table);
  CHECK(table.find("interference_comm on one rank") != std::string::npos);
  CHECK(table.find("not mapped: a one-rank communicator copies locally") != std::string::npos);
}

TEST_CASE("the elementwise class takes its faster kernel, the optimizer its workload's kernel", "[unit]") {
  test::TempDir dir;
  test::SyntheticTruth truth;
  truth.cast_fraction = 0.6;  // a slow cast kernel beside a 0.93 accumulation
  truth.adamw_fraction = 0.9, truth.multi_tensor_fraction = 0.7;
  const auto r = fit_doc(test::synthetic_node_measurements(truth, 13), dir);
  const auto& fractions = r.profile["compute"]["hbm_fraction_by_kernel"];
  CHECK(fractions["elementwise"]["value"].get<double>() == Approx(truth.accum_fraction).epsilon(0.02));
  CHECK(fractions["elementwise"]["source"].get<std::string>().find("also measured: cast_bf16_to_fp32") !=
        std::string::npos);
  CHECK(fractions["optimizer"]["value"].get<double>() == Approx(truth.multi_tensor_fraction).epsilon(0.02));
  CHECK(fractions["optimizer"]["source"].get<std::string>().find("the workload's kernel") != std::string::npos);
}
