// plan.pipeline.layout: Megatron-Core's pipeline_model_parallel_layout text, parsed as
// megatron/core/transformer/pipeline_parallel_layer_layout.py parses it, and the plans it gives.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/plan/pipeline_layout.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Matchers::Contains;

namespace {

using Counts = std::vector<std::int64_t>;

Counts repeated(std::int64_t value, std::size_t times) { return Counts(times, value); }
Counts joined(std::initializer_list<Counts> parts) {
  Counts out;
  for (const Counts& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string error_of(const std::string& text) { return parse_pipeline_layout(text).error; }

}  // namespace

TEST_CASE("Megatron-Bridge's DeepSeek-V3 layouts parse to their stages", "[unit]") {
  // perf_recipes/deepseek/h100/deepseek_v3.py: PP 8 x VP 4; the last stage holds the MTP layer and the loss.
  const PipelineLayout h100 = parse_pipeline_layout("Et|(tt|)*30mL");
  REQUIRE(h100.error.empty());
  REQUIRE(h100.stages.size() == 32);
  CHECK(layout_decoder_layers(h100) == joined({{1}, repeated(2, 30), {0}}));
  CHECK(h100.stages.front().embedding);
  CHECK(h100.stages.back().loss);
  CHECK(h100.stages.back().mtp == 1);
  CHECK(layout_mtp_layers(h100) == 1);
  for (std::size_t j = 1; j + 1 < h100.stages.size(); ++j) {
    CHECK(!h100.stages[j].embedding);
    CHECK(!h100.stages[j].loss);
  }
  // perf_recipes/deepseek/gb300/deepseek_v3.py: a repeat inside a repeated group.
  const PipelineLayout gb300 = parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  REQUIRE(gb300.error.empty());
  CHECK(layout_decoder_layers(gb300) == joined({{4}, repeated(4, 14), {1}}));
  CHECK(layout_decoder_layers(parse_pipeline_layout("Et*4|(tttt|)*14tmL")) == layout_decoder_layers(gb300));
  // Commas are cosmetic; empty stages are stages (recipes/glm/h100/glm5.py has them mid-model).
  CHECK(layout_decoder_layers(parse_pipeline_layout("E,t,t|t,t,L")) == Counts{2, 2});
  CHECK(layout_decoder_layers(parse_pipeline_layout("E||t|L")) == Counts{0, 0, 1, 0});
  CHECK(layout_decoder_layers(parse_pipeline_layout("EL")) == Counts{0});
}

TEST_CASE("A layout Megatron or moesim cannot run says why", "[unit]") {
  CHECK_THAT(error_of("Etx|L"), Contains("symbol 'x'") && Contains("E (embedding)"));
  CHECK_THAT(error_of("tE|L"), Contains("the first layer must be the embedding"));
  CHECK_THAT(error_of("Et|tL|t"), Contains("ends with 't'") && Contains("the last layer must be the loss L"));
  CHECK_THAT(error_of("Et|t"), Contains("names the loss L 0 times"));
  CHECK_THAT(error_of("Et|L|L"), Contains("names the loss L 2 times"));
  CHECK_THAT(error_of("Et|ELt|L"), Contains("embedding E 2 times"));
  CHECK_THAT(error_of("Etmt|L"), Contains("decoder layer t after an MTP layer"));
  CHECK_THAT(error_of(""), Contains("holds no layer"));
  CHECK_THAT(error_of("t*99999999999"), Contains("allowed: at most"));
  CHECK_THAT(error_of("(tt)*999999"), Contains("allowed: at most"));
  // Megatron runs these; moesim places the embedding first and the MTP layers with the loss.
  CHECK_THAT(error_of("|Et|L"), Contains("after an empty first stage"));
  CHECK_THAT(error_of("Et|tL|"), Contains("before an empty last stage"));
  // docs/user-guide/features/pipeline_parallel_layout.md's standalone MTP stage.
  CHECK_THAT(error_of("Et*3|(tt|)*29,m|L"), Contains("standalone MTP stage"));
}

TEST_CASE("A layout sets the plan's virtual stages and layer split", "[unit]") {
  const Scenario s =
      test::gallery("deepseek-v3", {"plan.pipeline.virtual_stages=null", "plan.pipeline.layout=\"Et|(tt|)*30mL\""});
  CHECK(s.plan.pp == 8);
  CHECK(s.plan.pp_virtual == 4);
  CHECK(s.plan.pp_layer_split == joined({{1}, repeated(2, 30), {0}}));
  // The same split written as plan.pipeline.layer_split is the same plan.
  const Scenario split = test::gallery(
      "deepseek-v3",
      {"plan.pipeline.virtual_stages=4", "plan.pipeline.layer_split=" + nlohmann::json(s.plan.pp_layer_split).dump()});
  CHECK(stage_layer_counts(split.plan, split.arch) == stage_layer_counts(s.plan, s.arch));
  CHECK(stage_layer_counts(s.plan, s.arch) == Counts{7, 8, 8, 8, 8, 8, 8, 6});
}

TEST_CASE("A layout that does not fit the plan or the model names plan.pipeline.layout", "[unit]") {
  const auto refused = [](const std::vector<std::string>& sets) {
    const InputError e = test::load_error(test::source_path("scenarios/gallery/deepseek-v3.json"), sets);
    CHECK(e.path() == "plan.pipeline.layout");
    return e.message();
  };
  CHECK_THAT(refused({"plan.pipeline.layout=\"Et|(tt|)*30mL\""}),
             Contains("4 per pipeline rank") && Contains("virtual_stages 2"));
  CHECK_THAT(refused({"plan.pipeline.layout=\"Et|(tt|)*29mL\""}), Contains("multiple of pipeline.degree 8"));
  CHECK_THAT(refused({"plan.pipeline.virtual_stages=null", "plan.pipeline.layout=\"Et|(tt|)*29t|mL\""}),
             Contains("holds 60 decoder layers") && Contains("num_layers 61"));
  CHECK_THAT(refused({"plan.pipeline.virtual_stages=null", "plan.pipeline.layout=\"Et|(tt|)*30L\""}),
             Contains("holds 0 MTP layers") && Contains("mtp.num_layers 1"));
  CHECK_THAT(refused({"plan.pipeline.layer_split=" + nlohmann::json(repeated(4, 16)).dump(),
                      "plan.pipeline.layout=\"Et*4|(tttt|)*14tmL\""}),
             Contains("one of them"));
  CHECK_THAT(refused({"plan.pipeline.virtual_stages=null", "plan.pipeline.schedule=\"1f1b\"",
                      "plan.pipeline.layout=\"Et*4|(tttt|)*14tmL\""}),
             Contains("interleaved_1f1b") && Contains("2 stages per pipeline rank"));
  CHECK_THAT(refused({"plan.pipeline.layout=\"Et|(tt|)*30m|L\""}), Contains("standalone MTP stage"));
}
