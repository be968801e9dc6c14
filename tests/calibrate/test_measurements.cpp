// The strict measurements reader: good files load; each bad one is rejected with the exact JSON
// path of the offending entry.
#include <catch2/catch.hpp>

#include <functional>

#include "calibrate/fit/measurements.hpp"
#include "models/common/errors.hpp"
#include "tests/calibrate/synthetic_measurements.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
json good() { return test::synthetic_node_measurements({}, 7); }

// Parses `doc` and returns the InputError's path ("" when it parsed).
std::string error_path(const json& doc) {
  try {
    fit::parse_measurements(doc, "m.json");
  } catch (const InputError& e) {
    CHECK(e.file() == "m.json");
    return e.path();
  }
  return "";
}

std::string message_of_text(const std::string& text) {
  test::TempDir dir;
  try {
    fit::read_measurements(dir.write("m.json", text));
  } catch (const InputError& e) {
    return e.message();
  }
  return "";
}
}  // namespace

TEST_CASE("a synthetic harness-format file reads back with its environment", "[unit]") {
  const auto f = fit::parse_measurements(good(), "m.json");
  CHECK(f.status == "complete");
  CHECK(f.environment.device_name == "NVIDIA B300 SXM (SYNTHETIC test data)");
  CHECK(f.environment.date_utc == "2000-01-01T00:00:00Z");
  REQUIRE(!f.measurements.empty());
  CHECK(f.measurements[0].path == "measurements[0]");
  CHECK(f.measurements[0].median_us > 0);
  CHECK(fit::median_of({3, 1, 2, 10}) == 2.5);
}

TEST_CASE("bad measurement files are rejected with the path of the offending entry", "[unit]") {
  struct Case {
    const char* what;
    std::function<void(json&)> mutate;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"missing field", [](json& d) { d["measurements"][2].erase("group_size"); }, "measurements[2].group_size"},
      {"missing times", [](json& d) { d["measurements"][4].erase("times_us"); }, "measurements[4].times_us"},
      {"unknown kind", [](json& d) { d["measurements"][0]["kind"] = "all_reduce_fast"; }, "measurements[0].kind"},
      {"unknown key", [](json& d) { d["measurements"][1]["latency"] = 3; }, "measurements[1].latency"},
      {"zero time", [](json& d) { d["measurements"][1]["times_us"][0] = 0; }, "measurements[1].times_us[0]"},
      {"negative time", [](json& d) { d["measurements"][3]["times_us"][5] = -2.5; }, "measurements[3].times_us[5]"},
      {"null time (NaN)", [](json& d) { d["measurements"][3]["times_us"][2] = nullptr; },
       "measurements[3].times_us[2]"},
      {"empty times", [](json& d) { d["measurements"][5]["times_us"] = json::array(); }, "measurements[5].times_us"},
      {"sizes go back", [](json& d) { std::swap(d["measurements"][3]["bytes"], d["measurements"][4]["bytes"]); },
       "measurements[4].bytes"},
      {"repeated size", [](json& d) { d["measurements"][7]["bytes"] = d["measurements"][6]["bytes"]; },
       "measurements[7].bytes"},
      {"zero bytes", [](json& d) { d["measurements"][6]["bytes"] = 0; }, "measurements[6].bytes"},
      {"bad dtype", [](json& d) { d["measurements"][6]["dtype"] = "float"; }, "measurements[6].dtype"},
      {"bad check", [](json& d) { d["measurements"][6]["check"] = "passed"; }, "measurements[6].check"},
      {"wrong schema", [](json& d) { d["schema"] = "moesim-measurements/2"; }, "schema"},
      {"no environment date", [](json& d) { d["environment"].erase("date_utc"); }, "environment.date_utc"},
      {"unknown top-level key", [](json& d) { d["notes"] = "x"; }, "notes"},
      {"measurements not an array", [](json& d) { d["measurements"] = json::object(); }, "measurements"},
  };
  for (const auto& c : cases) {
    json doc = good();
    c.mutate(doc);
    INFO(c.what);
    CHECK(error_path(doc) == c.path);
  }
}

TEST_CASE("grouped GEMM and interference records are checked field by field", "[unit]") {
  json doc = good();
  std::size_t grouped = 0, inter = 0;
  for (std::size_t i = 0; i < doc["measurements"].size(); ++i) {
    if (doc["measurements"][i]["kind"] == "grouped_gemm" && !grouped) grouped = i;
    if (doc["measurements"][i]["kind"] == "interference" && !inter) inter = i;
  }
  const std::string g = "measurements[" + std::to_string(grouped) + "]";
  const std::string f = "measurements[" + std::to_string(inter) + "]";
  json both_rows = doc;
  both_rows["measurements"][grouped]["k"] = "rows";
  CHECK(error_path(both_rows) == g + ".m");
  json bad_alone = doc;
  bad_alone["measurements"][inter]["alone_times_us"][1] = 0;
  CHECK(error_path(bad_alone) == f + ".alone_times_us[1]");
  // The harness writes an interference record with no overlapped iteration as empty times and
  // overlapped_iters 0: kept, marked unusable; empty times without that mark are an error.
  json none = doc;
  none["measurements"][inter]["times_us"] = json::array();
  CHECK(error_path(none) == f + ".times_us");
  none["measurements"][inter]["overlapped_iters"] = 0;
  none["measurements"][inter]["slowdown"] = nullptr;
  CHECK(error_path(none).empty());
  CHECK_FALSE(fit::parse_measurements(none, "m.json").measurements[inter].usable);
}

TEST_CASE("non-finite numbers and malformed JSON are rejected", "[unit]") {
  const std::string text = good().dump();
  const std::string key = "\"times_us\":[";
  const auto p = text.find(key) + key.size();
  CHECK(message_of_text(text.substr(0, p) + "NaN," + text.substr(p)).find("malformed JSON") != std::string::npos);
  const std::string huge = message_of_text(text.substr(0, p) + "1e999," + text.substr(p));
  INFO(huge);
  CHECK(!huge.empty());
}
