// The walls between the rooms (DESIGN.md "Layout"), enforced by reading every source file's
// project includes: data flows scenario -> models -> sim -> studies -> reports, and cli/ is the
// one place that knows every folder. Also the house limit of 400 lines per source file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/fixtures.hpp"

namespace fs = std::filesystem;

namespace {

struct SourceFile {
  std::string path;                   // relative to the repository root
  std::vector<std::string> includes;  // project includes ("dir/file.hpp")
  std::size_t lines = 0;
  std::size_t longest_line = 0;
};

std::vector<SourceFile> sources_under(const std::string& folder) {
  std::vector<SourceFile> out;
  const fs::path root(moesim::test::source_path(""));
  static const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu")) continue;
    SourceFile f;
    f.path = fs::relative(entry.path(), root).string();
    std::ifstream in(entry.path());
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      ++f.lines;
      f.longest_line = std::max(f.longest_line, line.size());
      if (std::regex_search(line, m, include)) f.includes.push_back(m[1].str());
    }
    out.push_back(std::move(f));
  }
  return out;
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// Every project include of `folder` that starts with one of `forbidden` (and is not `allowed`).
std::vector<std::string> breaches(const std::string& folder, const std::vector<std::string>& forbidden,
                                  const std::vector<std::string>& allowed = {}) {
  std::vector<std::string> out;
  for (const auto& f : sources_under(folder)) {
    for (const auto& inc : f.includes) {
      const bool allowed_here = std::find(allowed.begin(), allowed.end(), inc) != allowed.end();
      for (const auto& prefix : forbidden) {
        if (starts_with(inc, prefix) && !allowed_here) out.push_back(f.path + " includes " + inc);
      }
    }
  }
  return out;
}

// Headers that run or price the step (as opposed to the result types a report renders).
const std::vector<std::string> kComputesCosts = {
    "models/costs/",  "sim/engine.hpp",           "sim/step_builder.hpp",     "sim/step_emitter.hpp",
    "sim/schedules/", "sim/resource_sharing.hpp", "sim/pipeline_schedule.hpp"};

}  // namespace

TEST_CASE("models/ includes nothing from sim/, studies/, reports/ or cli/", "[unit][layering]") {
  CHECK(breaches("models", {"sim/", "studies/", "reports/", "cli/", "calibrate/", "fuzz/"}) ==
        std::vector<std::string>{});
}

TEST_CASE("models/ knows no time order: no pass order, task or schedule is named there", "[unit][layering]") {
  // The order passes, tasks and allocations happen in is sim/'s (pipeline_schedule, the step
  // builder, allocation_order): models/ prices and counts, and is handed what needs an order.
  static const std::regex time_order(R"re(\b(StagePass|PipeOp|TaskId|TaskGraph|StepEmitter|stage_schedule)\b)re"
                                     R"re(|\b(stage_pass_orders|replay_stage_allocations)\b)re");
  std::vector<std::string> named;
  const fs::path root(moesim::test::source_path(""));
  for (const auto& f : sources_under("models")) {
    std::ifstream in(root / f.path);
    std::smatch m;
    for (std::string line; std::getline(in, line);)
      if (std::regex_search(line, m, time_order)) named.push_back(f.path + " names " + m[0].str());
  }
  CHECK(named == std::vector<std::string>{});
}

TEST_CASE("sim/ includes nothing from studies/, reports/ or cli/ (how time passes, no files)", "[unit][layering]") {
  CHECK(breaches("sim", {"studies/", "reports/", "cli/", "calibrate/", "fuzz/"}) == std::vector<std::string>{});
}

TEST_CASE("sim/ and reports/ take a composed scenario, never the scenario reader", "[unit][layering]") {
  CHECK(breaches("sim", {"models/input/scenario.hpp"}) == std::vector<std::string>{});
  CHECK(breaches("reports", {"models/input/scenario.hpp"}) == std::vector<std::string>{});
}

TEST_CASE("studies/ runs replays but prices no kernel and writes no report", "[unit][layering]") {
  std::vector<std::string> forbidden = {"reports/", "cli/", "calibrate/", "fuzz/"};
  for (const auto& h : kComputesCosts) {
    if (h != "sim/pipeline_schedule.hpp") forbidden.push_back(h);  // studies may ask the schedule
  }
  CHECK(breaches("studies", forbidden) == std::vector<std::string>{});
}

TEST_CASE("reports/ includes nothing that computes costs, nor cli/", "[unit][layering]") {
  std::vector<std::string> forbidden = kComputesCosts;
  forbidden.insert(forbidden.end(), {"cli/", "calibrate/", "fuzz/"});
  CHECK(breaches("reports", forbidden) == std::vector<std::string>{});
}

TEST_CASE("calibrate/fit builds on models/ alone", "[unit][layering]") {
  CHECK(breaches("calibrate/fit", {"sim/", "studies/", "reports/", "cli/", "models/input/"}) ==
        std::vector<std::string>{});
}

TEST_CASE("No source file is over 400 lines", "[unit][layering]") {
  constexpr std::size_t kMaxLines = 400;  // DESIGN.md house style
  std::vector<std::string> long_files;
  for (const char* folder : {"models", "sim", "studies", "reports", "cli", "calibrate", "fuzz", "tests"}) {
    for (const auto& f : sources_under(folder)) {
      if (f.lines > kMaxLines) long_files.push_back(f.path + ": " + std::to_string(f.lines) + " lines");
    }
  }
  CHECK(long_files == std::vector<std::string>{});
}

TEST_CASE("No source line is over 120 characters (.clang-format)", "[unit][layering]") {
  constexpr std::size_t kColumns = 120;
  std::vector<std::string> wide;
  for (const char* folder : {"models", "sim", "studies", "reports", "cli", "calibrate", "fuzz", "tests"}) {
    for (const auto& f : sources_under(folder)) {
      if (f.longest_line > kColumns) wide.push_back(f.path + ": " + std::to_string(f.longest_line) + " columns");
    }
  }
  CHECK(wide == std::vector<std::string>{});
}

TEST_CASE("No test name holds a semicolon (ctest would split it and run nothing)", "[unit][layering]") {
  // CTest's discovered names are lists: "a; b" becomes the filter "a", which matches no test.
  // The name is one string literal or several written one after another.
  static const std::regex test_case(R"re(TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+))re");
  std::vector<std::string> split;
  const fs::path root(moesim::test::source_path(""));
  for (const auto& entry : fs::recursive_directory_iterator(root / "tests")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator it(text.begin(), text.end(), test_case), end; it != end; ++it) {
      if ((*it)[1].str().find(';') != std::string::npos) split.push_back((*it)[1].str());
    }
  }
  CHECK(split == std::vector<std::string>{});
}
