// Every seed of fuzz/corpus/TARGET and every input a fuzzer once crashed on
// (tests/data/fuzz/TARGET/, kept as regression tests) goes through its fuzz entry: accepted, or
// refused with an InputError; never another exception, an abort or a sanitizer report.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/entries.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Returns how many inputs were replayed.
std::size_t replay(const std::string& target) {
  const auto& all = fuzz::targets();
  const auto t = std::find_if(all.begin(), all.end(), [&](const fuzz::Target& x) { return x.name == target; });
  REQUIRE(t != all.end());
  std::size_t n = 0;
  for (const auto& dir : {"fuzz/corpus/" + target, "tests/data/fuzz/" + target}) {
    for (const auto& file : files_in(test::source_path(dir))) {
      INFO(file);
      CHECK_NOTHROW(t->run(test::slurp(file)));
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("Fuzz replay: scenario files", "[unit][fuzz]") { CHECK(replay("scenario") >= 10); }
TEST_CASE("Fuzz replay: hardware profiles", "[unit][fuzz]") { CHECK(replay("profile") >= 6); }
TEST_CASE("Fuzz replay: --set and --vary expressions", "[unit][fuzz]") { CHECK(replay("overrides") >= 5); }
TEST_CASE("Fuzz replay: measurement files and the fitter", "[unit][fuzz]") { CHECK(replay("measurements") >= 2); }
TEST_CASE("Fuzz replay: nccl-tests logs", "[unit][fuzz]") { CHECK(replay("nccl_tests") >= 2); }
TEST_CASE("Fuzz replay: the plan space", "[unit][fuzz]") { CHECK(replay("plan_space") >= 5); }

TEST_CASE("Fuzz target list matches the seed corpus folders", "[unit][fuzz]") {
  for (const auto& t : fuzz::targets()) {
    INFO(t.name);
    CHECK(std::filesystem::is_directory(test::source_path(std::string("fuzz/corpus/") + t.name)));
  }
}
