// A thread's parsed sections, found again by their JSON and origin (models/input/section_memo.hpp),
// and compose() reusing them across a study's points.
#include <catch2/catch.hpp>

#include <string>

#include "models/input/scenario.hpp"
#include "models/input/section_memo.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// A parse that counts its calls and returns the section's "v".
struct CountingParse {
  int* calls;
  const nlohmann::json* section;
  int operator()() const {
    ++*calls;
    return section->at("v").get<int>();
  }
};

int lookup(SectionMemo<int>& memo, const nlohmann::json& section, const std::string& file, const std::string& prefix,
           int& calls) {
  return memo.get(section, file, prefix, CountingParse{&calls, &section});
}

}  // namespace

TEST_CASE("A section memo parses each distinct section and origin once", "[unit]") {
  SectionMemo<int> memo;
  int calls = 0;
  const nlohmann::json a = {{"v", 1}, {"name", "a"}};
  const nlohmann::json b = {{"v", 2}, {"name", "b"}};
  CHECK(lookup(memo, a, "f.json", "", calls) == 1);
  CHECK(lookup(memo, a, "f.json", "", calls) == 1);
  CHECK(calls == 1);
  CHECK(lookup(memo, b, "f.json", "", calls) == 2);
  CHECK(calls == 2);
  // The same JSON from another file or path is parsed again: its errors would name that origin.
  CHECK(lookup(memo, a, "g.json", "", calls) == 1);
  CHECK(lookup(memo, a, "f.json", "plan", calls) == 1);
  CHECK(calls == 4);
  CHECK(lookup(memo, a, "f.json", "", calls) == 1);
  CHECK(lookup(memo, b, "f.json", "", calls) == 2);
  CHECK(calls == 4);
  // Equal by value but not by type (an integer field may refuse 2.0): parsed on its own.
  const nlohmann::json b_float = {{"v", 2.0}, {"name", "b"}};
  REQUIRE(b_float == b);
  CHECK(lookup(memo, b_float, "f.json", "", calls) == 2);
  CHECK(calls == 5);
}

TEST_CASE("A section memo keeps no failed parse and forgets its oldest section past its size", "[unit]") {
  SectionMemo<int> memo;
  int calls = 0;
  const nlohmann::json bad = {{"w", 1}};
  CHECK_THROWS(lookup(memo, bad, "f.json", "", calls));
  CHECK_THROWS(lookup(memo, bad, "f.json", "", calls));
  CHECK(calls == 2);

  calls = 0;
  const auto section = [](std::size_t k) { return nlohmann::json{{"v", static_cast<int>(k)}}; };
  for (std::size_t k = 0; k < SectionMemo<int>::kKept; ++k)
    CHECK(lookup(memo, section(k), "f.json", "", calls) == static_cast<int>(k));
  CHECK(calls == static_cast<int>(SectionMemo<int>::kKept));
  for (std::size_t k = 0; k < SectionMemo<int>::kKept; ++k) lookup(memo, section(k), "f.json", "", calls);
  CHECK(calls == static_cast<int>(SectionMemo<int>::kKept));  // all kept
  const std::size_t past = SectionMemo<int>::kKept;
  CHECK(lookup(memo, section(past), "f.json", "", calls) == static_cast<int>(past));
  CHECK(lookup(memo, section(0), "f.json", "", calls) == 0);  // the oldest was replaced: parsed again
  CHECK(calls == static_cast<int>(SectionMemo<int>::kKept) + 2);
}

TEST_CASE("Composing a study's points reuses parses without changing any point", "[unit]") {
  const ScenarioSource source = read_scenario(test::source_path("scenarios/fig8/moe-ddp-ep8.json"), {});
  const auto point = [&](int experts, const std::string& design) {
    return compose(source,
                   {{parse_override("architecture.moe.num_experts=" + std::to_string(experts), "--vary"), "--vary"},
                    {parse_override("design=" + design, "--vary"), "--vary"}});
  };
  for (int round = 0; round < 2; ++round) {
    const Scenario a = point(32, "ddp+ep8");
    const Scenario b = point(64, "fsdp");
    CHECK(a.arch.moe->num_experts == 32);
    CHECK(a.plan.ep == 8);
    CHECK(b.arch.moe->num_experts == 64);
    CHECK(b.plan.ep == 1);
    CHECK(a.resolved["architecture"]["moe"]["num_experts"] == 32);
    CHECK(b.resolved["architecture"]["moe"]["num_experts"] == 64);
  }
  // A section that fails is refused at every point, with the change blamed each time.
  for (int round = 0; round < 2; ++round) {
    try {
      point(0, "ddp");
      FAIL("an expert count of 0 composed");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("architecture.moe.num_experts") != std::string::npos);
      CHECK(std::string(e.what()).find("--vary") != std::string::npos);
    }
  }
}
