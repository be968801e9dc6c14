// Nesting depth of every JSON input is bounded: 100,000 nested arrays or objects once crashed the
// process (the error message walked the value recursively) while 50,000 gave the proper error.
// Each input kind refuses such a document with an InputError naming it and the depth allowed.
#include <catch2/catch.hpp>

#include <string>

#include "calibrate/fit/measurements.hpp"
#include "models/common/json_file.hpp"
#include "models/input/overrides.hpp"
#include "studies/sweep.hpp"
#include "studies/validation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

constexpr int kCrashDepth = 100000;  // the depth of the reported crash

std::string nested_arrays(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

std::string nested_objects(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += "{\"plan\":";
  text += "1";
  return text + std::string(static_cast<std::size_t>(depth), '}');
}

// The error names `file` and says how deep is allowed.
void check_refused(const std::function<void()>& load, const std::string& file) {
  try {
    load();
    FAIL("accepted a document nested " << kCrashDepth << " levels deep");
  } catch (const InputError& e) {
    CHECK(e.file() == file);
    CHECK_THAT(e.message(), Catch::Contains("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels"));
  }
}

}  // namespace

TEST_CASE("Deeply nested JSON is refused for every input, naming the input and the depth allowed", "[unit]") {
  test::TempDir dir;
  const std::string arrays = dir.write("arrays.json", nested_arrays(kCrashDepth));
  const std::string objects = dir.write("objects.json", nested_objects(kCrashDepth));
  check_refused([&] { load_scenario(arrays, {}); }, arrays);
  check_refused([&] { load_scenario(objects, {}); }, objects);

  nlohmann::json doc = test::inline_fig8_document("ddp");
  doc["hardware"] = "objects.json";  // a profile file named by the scenario
  const std::string scenario = dir.write("scenario.json", doc.dump());
  check_refused([&] { load_scenario(scenario, {}); }, objects);

  check_refused([&] { fit::read_measurements(objects); }, objects);
  check_refused([&] { validate_dataset(arrays); }, arrays);
  check_refused([&] { read_ordered_json_file(objects); }, objects);  // the fitter's base profile
  check_refused([&] { parse_override("plan.nodes=" + nested_arrays(kCrashDepth), "--set"); }, "--set");
  check_refused([&] { parse_axis("plan.nodes=" + nested_arrays(kCrashDepth)); }, "--vary");
}

TEST_CASE("Nesting up to the bound is accepted, one level more is refused with its position", "[unit]") {
  CHECK_NOTHROW(parse_json_text(nested_arrays(kMaxJsonDepth), "ok.json"));
  // Brackets inside strings do not count.
  std::string brackets_in_string = "{\"a\": \"";  // built with += (GCC 12 warns on "lit" + string)
  brackets_in_string += std::string(1000, '[');
  brackets_in_string += "\"}";
  CHECK_NOTHROW(parse_json_text(brackets_in_string, "strings.json"));
  try {
    parse_json_text(nested_arrays(kMaxJsonDepth + 1), "deep.json");
    FAIL("accepted one level past the bound");
  } catch (const InputError& e) {
    CHECK_THAT(e.message(), Catch::Contains("at line 1, column " + std::to_string(kMaxJsonDepth + 1)));
  }
}

TEST_CASE("moesim exits 2, not 139, on a 100,000-level document", "[unit]") {
  test::TempDir dir;
  const std::string deep = dir.write("deep.json", nested_arrays(kCrashDepth));
  CHECK(test::run_cli("simulate " + deep) == 2);
  CHECK(test::run_cli("ledger " + dir.write("deep-objects.json", nested_objects(kCrashDepth))) == 2);
}
