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

TEST_CASE("Megatron-Core's uneven split: the first and last stages' counts, or the embedding and loss as layers",
          "[unit]") {
  const auto layers = [](const MegatronSplit& keys, std::int64_t num_layers, std::int64_t pp, std::int64_t chunks) {
    const StageSplit split = megatron_stage_split(keys, num_layers, pp, chunks);
    INFO(split.key << ": " << split.error);
    CHECK(split.error.empty());
    return split.layers;
  };
  // Megatron-Bridge's Llama 3.1 405B recipes (recipes/llama/h100/llama3.py, which its perf recipes
  // build on): 126 layers + embedding + loss = 128 over PP 8; with VP 8 two a chunk, one beside each.
  MegatronSplit counted;
  counted.account_for_embedding = counted.account_for_loss = true;
  CHECK(layers(counted, 126, 8, 8) == joined({{1}, repeated(2, 62), {1}}));
  CHECK(layers(counted, 126, 8, 2) == joined({{7}, repeated(8, 14), {7}}));
  MegatronSplit embedding_only;
  embedding_only.account_for_embedding = true;
  CHECK(layers(embedding_only, 7, 4, 1) == Counts{1, 2, 2, 2});
  // The first and last ranks' counts (perf_recipes/glm_moe_dsa/gb200/glm5.py sets 14 and 16), the
  // middle ranks even, each rank's count split over its chunks in model order.
  MegatronSplit ends;
  ends.first_stage_layers = 6;
  ends.last_stage_layers = 8;
  CHECK(layers(ends, 30, 4, 1) == Counts{6, 8, 8, 8});
  CHECK(layers(ends, 30, 4, 2) == Counts{3, 4, 4, 4, 3, 4, 4, 4});
  MegatronSplit first_only;
  first_only.first_stage_layers = 2;
  CHECK(layers(first_only, 11, 4, 1) == Counts{2, 3, 3, 3});
  // transformer_config.py's refusals, each naming the key at fault.
  const auto refused = [](const MegatronSplit& keys, std::int64_t num_layers, std::int64_t pp, std::int64_t chunks) {
    const StageSplit split = megatron_stage_split(keys, num_layers, pp, chunks);
    CHECK(split.layers.empty());
    return split.key + ": " + split.error;
  };
  MegatronSplit odd = ends;
  odd.first_stage_layers = 5;
  CHECK_THAT(refused(odd, 29, 4, 2), Contains("first_stage_layers: 5 layers are not divisible by the 2 model chunks"));
  CHECK_THAT(refused(odd, 30, 4, 1), Contains("leaves 17 layers for 2 middle stages"));
  CHECK_THAT(refused(ends, 20, 2, 1), Contains("6 middle layers remain for 0 middle stages"));
  CHECK_THAT(refused(ends, 14, 4, 1), Contains("0 middle layers remain for 2 middle stages"));
  CHECK_THAT(refused(counted, 61, 8, 1), Contains("account_for_embedding: counts 63 layers"));
  CHECK_THAT(refused(counted, 126, 8, 3), Contains("x the 3 model chunks"));
}

TEST_CASE("The uneven split keys set a plan's stages and refuse what Megatron-Core refuses", "[unit]") {
  const Scenario s =
      test::gallery("llama3-405b", {"plan.pipeline.account_for_embedding=true", "plan.pipeline.account_for_loss=true"});
  CHECK(s.plan.pp_layer_split.empty());
  CHECK(virtual_stage_layer_counts(s.plan, s.arch) == joined({{1}, repeated(2, 62), {1}}));
  CHECK(stage_layer_counts(s.plan, s.arch) == joined({{7}, repeated(8, 14), {7}}));
  const auto refused = [](const std::vector<std::string>& sets) {
    return test::load_error(test::source_path("scenarios/gallery/llama3-405b.json"), sets);
  };
  const InputError both = refused({"plan.pipeline.first_stage_layers=4", "plan.pipeline.account_for_loss=true"});
  CHECK(both.path() == "plan.pipeline.first_stage_layers");
  CHECK_THAT(both.message(), Contains("not both"));
  const InputError split = refused(
      {"plan.pipeline.layer_split=" + nlohmann::json(repeated(2, 63)).dump(), "plan.pipeline.last_stage_layers=8"});
  CHECK_THAT(split.message(), Contains("is given with pipeline.layer_split"));
  const InputError chunks = refused({"plan.pipeline.first_stage_layers=6"});
  CHECK(chunks.path() == "plan.pipeline.first_stage_layers");
  CHECK_THAT(chunks.message(), Contains("6 layers are not divisible by the 4 model chunks"));
  const InputError flat = refused({"plan.pipeline.account_for_loss=true"});
  CHECK(flat.path() == "plan.pipeline.account_for_loss");
  CHECK_THAT(flat.message(), Contains("counts 127 layers"));
  const InputError v = refused({"plan.pipeline.virtual_stages=2", "plan.pipeline.schedule=\"zbv\"",
                                "plan.pipeline.account_for_embedding=true", "plan.pipeline.account_for_loss=true"});
  CHECK_THAT(v.message(), Contains("V-shape"));
  CHECK(refused({"plan.pipeline.first_stage_layers=0"}).path() == "plan.pipeline.first_stage_layers");
}

TEST_CASE("A design spec resets a Megatron layout or uneven split with the rest of the pipeline", "[unit]") {
  // The layout names the stages of the plan it was written for; design=... names a whole plan.
  const Scenario s = test::gallery("deepseek-v3", {"plan.pipeline.virtual_stages=null",
                                                   "plan.pipeline.layout=\"Et|(tt|)*30mL\"", "design=ddp+ep8+pp2"});
  CHECK(s.plan.pp == 2);
  CHECK(s.plan.pp_megatron.layout.empty());
  CHECK(s.plan.pp_layer_split.empty());
  CHECK(stage_layer_counts(s.plan, s.arch) == Counts{31, 30});
  const Scenario uneven =
      test::gallery("llama3-405b", {"plan.pipeline.account_for_embedding=true", "plan.pipeline.account_for_loss=true",
                                    "plan.nodes=64", "design=ddp+tp8+pp8"});
  CHECK(!uneven.plan.pp_megatron.uneven());
  CHECK(!uneven.resolved["plan"]["pipeline"].contains("account_for_loss"));
}
