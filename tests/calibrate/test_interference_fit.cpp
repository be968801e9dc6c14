// The communication side of the interference group: the strict reader's interference_comm
// records and the fit of interference.comm_slowdown_with_compute from synthetic files generated
// from known slowdowns (seeded 1% log-normal noise per iteration: recovered within 0.02).
#include <catch2/catch.hpp>

#include <functional>
#include <tuple>

#include "calibrate/fit/fitter.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
const std::string kBase = "hardware_profiles/b300-hgx.json";
// Median of 10 iterations at 1% noise, then a median over records: well inside 0.02.
constexpr double kSlowdownTolerance = 0.02;

fit::FitResult fit_truth(const test::SyntheticTruth& t, test::TempDir& dir) {
  const auto file = dir.write("node.json", test::synthetic_node_measurements(t, 5).dump());
  return fit::fit_profile({file}, test::source_path(kBase), {});
}

std::string all_warnings(const fit::FitResult& r) {
  std::string w;
  for (const auto& s : r.warnings) w += s + "\n";
  return w;
}

std::size_t first_comm_record(const json& doc) {
  for (std::size_t i = 0; i < doc["measurements"].size(); ++i)
    if (doc["measurements"][i]["kind"] == "interference_comm") return i;
  FAIL("no interference_comm record in the synthetic file");
  return 0;
}
}  // namespace

TEST_CASE("comm_slowdown_with_compute is fitted back from the communication side", "[unit]") {
  test::TempDir dir;
  const test::SyntheticTruth truth;
  const auto r = fit_truth(truth, dir);
  const auto& q = r.profile["interference"]["comm_slowdown_with_compute"];
  REQUIRE(q["kind"] == "fitted");
  CHECK(q["value"].get<double>() == Approx(truth.comm_slowdown.at("all_reduce fp32")).margin(kSlowdownTolerance));
  const std::string source = q["source"];
  CHECK(source.find("min(link share, 1/(1+s), HBM share)") != std::string::npos);
  CHECK(source.find("residual rms") != std::string::npos);
  CHECK(source.find("(per kind: all_gather bf16 0.") != std::string::npos);
  const std::string table = fit::format_fit_table(r);
  INFO(table);
  CHECK(table.find("comm slowdown beside compute") != std::string::npos);
  CHECK(table.find("interference.comm_slowdown_with_compute") != std::string::npos);
  for (const auto& [key, slow] : truth.comm_slowdown) {
    CHECK(table.find("comm beside compute: " + key) != std::string::npos);
  }
  CHECK(all_warnings(r).find("collective kinds differ") == std::string::npos);
  // The GEMM side is still fitted from its own records.
  CHECK(r.profile["interference"]["compute_slowdown_with_comm"]["kind"] == "fitted");
}

TEST_CASE("collective kinds that slow differently are reported, the median fitted", "[unit]") {
  test::TempDir dir;
  test::SyntheticTruth truth;
  truth.comm_slowdown["all_to_all bf16"] = 0.10;
  truth.comm_slowdown["all_reduce fp32"] = 0.70;
  const auto r = fit_truth(truth, dir);
  // 8 records at x1.1, 16 at x1.4, 8 at x1.7: the median is x1.4.
  CHECK(r.profile["interference"]["comm_slowdown_with_compute"]["value"].get<double>() ==
        Approx(0.40).margin(kSlowdownTolerance));
  const std::string warnings = all_warnings(r);
  INFO(warnings);
  CHECK(warnings.find("the collective kinds differ") != std::string::npos);
  CHECK(warnings.find("all_reduce fp32 is 5") != std::string::npos);  // 1.7 / 1.1 - 1 = 55% slower
  const std::string table = fit::format_fit_table(r);
  const auto row = table.find("comm beside compute: all_reduce fp32");
  REQUIRE(row != std::string::npos);
  CHECK(table.substr(row, table.find('\n', row) - row).find(" x1.7") != std::string::npos);
}

TEST_CASE("records with no iteration inside the window or a failed check are not fitted", "[unit]") {
  test::TempDir dir;
  json doc = test::synthetic_node_measurements({}, 5);
  for (auto& m : doc["measurements"]) {
    if (m["kind"] != "interference_comm") continue;
    if (m["background"] == "gemm") {
      m["times_us"] = json::array();
      m["overlapped_iters"] = 0;
    } else {
      m["check"] = "failed";
    }
  }
  const auto file = dir.write("node.json", doc.dump());
  const auto r = fit::fit_profile({file}, test::source_path(kBase), {});
  CHECK(r.profile["interference"]["comm_slowdown_with_compute"]["kind"] != "fitted");
}

TEST_CASE("bad interference_comm records are refused naming the path", "[unit]") {
  const json good = test::synthetic_node_measurements({}, 5);
  const std::string at = "measurements[" + std::to_string(first_comm_record(good)) + "]";
  const std::size_t i = first_comm_record(good);
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    std::string path;
  };
  const std::vector<Case> cases = {
      {"missing collective", [i](json& m) { m[i].erase("collective"); }, at + ".collective"},
      {"missing overlapped_iters", [i](json& m) { m[i].erase("overlapped_iters"); }, at + ".overlapped_iters"},
      {"missing alone times", [i](json& m) { m[i].erase("alone_times_us"); }, at + ".alone_times_us"},
      {"unknown key", [i](json& m) { m[i]["speedup"] = 1.2; }, at + ".speedup"},
      {"NaN (null) alone time", [i](json& m) { m[i]["alone_times_us"][3] = nullptr; }, at + ".alone_times_us[3]"},
      {"zero time", [i](json& m) { m[i]["times_us"][0] = 0.0; }, at + ".times_us[0]"},
      {"zero bytes", [i](json& m) { m[i]["bytes"] = 0; }, at + ".bytes"},
      {"unknown collective", [i](json& m) { m[i]["collective"] = "broadcast"; }, at + ".collective"},
      {"unknown background", [i](json& m) { m[i]["background"] = "attention"; }, at + ".background"},
      {"iterations disagree", [i](json& m) { m[i]["overlapped_iters"] = 3; }, at + ".overlapped_iters"},
      {"infinite busbw", [i](json& m) { m[i]["busbw_GBps"] = nullptr; }, at + ".busbw_GBps"},
  };
  for (const auto& c : cases) {
    json doc = good;
    c.mutate(doc["measurements"]);
    INFO(c.what);
    std::string path;
    try {
      fit::parse_measurements(doc, "comm.json");
    } catch (const InputError& e) {
      CHECK(e.file() == "comm.json");
      path = e.path();
    }
    CHECK(path == c.path);
  }
}

TEST_CASE("kinds measured once each give no verdict on how far apart they are", "[unit]") {
  // The seed corpus file holds one all_reduce and one all_to_all record, 0.3% apart.
  const std::string file =
      test::source_path("fuzz/corpus/measurements/synthetic-interference-comm-and-memory-classes.json");
  fit::FitOptions opts;
  opts.force_device = true;  // a synthetic device name
  const auto r = fit::fit_profile({file}, test::source_path(kBase), opts);
  CHECK(r.profile["interference"]["comm_slowdown_with_compute"]["kind"] == "fitted");
  CHECK(all_warnings(r).find("collective kinds differ") == std::string::npos);
}

TEST_CASE("memory-class records are read as strictly as the others", "[unit]") {
  const json good =
      read_json_file(test::source_path("fuzz/corpus/measurements/synthetic-interference-comm-and-memory-classes.json"));
  std::size_t softmax = 0;
  for (std::size_t i = 0; i < good["measurements"].size(); ++i)
    if (good["measurements"][i]["kind"] == "softmax_rows_bf16") softmax = i;
  REQUIRE(softmax > 0);
  const std::string at = "measurements[" + std::to_string(softmax) + "]";
  for (const auto& [what, key, value] : {std::tuple{"negative row width", "row_elements", json(-1)},
                                         {"null GB/s", "GBps", json(nullptr)},
                                         {"unknown key", "rows", json(3)}}) {
    INFO(what);
    json doc = good;
    doc["measurements"][softmax][key] = value;
    std::string path;
    try {
      fit::parse_measurements(doc, "classes.json");
    } catch (const InputError& e) {
      path = e.path();
    }
    CHECK(path == at + "." + key);
  }
}
