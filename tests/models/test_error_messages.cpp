// What an error says: the override or design that set a bad value is named instead of the file,
// sizes read the same in --set as in --vary, ranges print whole bounds exactly, and every unknown
// key or name suggests the closest allowed one (issue 16, "Errors").
#include <catch2/catch.hpp>

#include "models/common/json_reader.hpp"
#include "models/common/suggest.hpp"
#include "models/costs/collective_model.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/hw/profile_lookup.hpp"
#include "models/input/overrides.hpp"
#include "models/input/sweep_spec.hpp"
#include "models/plan/design_spec.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Contains;

namespace {
const std::string kDdp = "scenarios/fig8/moe-ddp.json";

InputError compose_error(const ScenarioSource& source, const PointOverrides& point) {
  try {
    compose(source, changes_of(point));
  } catch (const InputError& e) {
    return e;
  }
  FAIL("composed without an error");
  throw std::logic_error("unreachable");
}

std::string unknown_name(const std::function<void()>& lookup) {
  try {
    lookup();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("A misspelt key written by --set is blamed on that --set, with a suggestion", "[unit]") {
  const InputError e = test::load_error(test::source_path(kDdp), {"plan.expert_paralel.degree=8"});
  INFO(e.what());
  CHECK(e.file() == "--set");
  CHECK(e.path() == "plan.expert_paralel");
  CHECK_THAT(e.message(), Contains("unknown key; did you mean 'expert_parallel'? allowed keys here: "));
  CHECK_THAT(e.message(), Contains("(value set by --set 'plan.expert_paralel.degree=8')"));
  CHECK_THAT(std::string(e.what()), !Contains("ddp-1node.json"));
}

TEST_CASE("A design's impossible plan field is blamed on that design", "[unit]") {
  const ScenarioSource source = read_scenario(test::source_path(kDdp), {});
  const InputError e = compose_error(source, {{"design", "ddp+ep3"}});
  INFO(e.what());
  CHECK(e.file() == "--design");
  CHECK(e.path() == "plan.expert_parallel.degree");
  CHECK_THAT(e.message(), Contains("(value set by --design 'ddp+ep3')"));
  // The same design as a --set names that --set.
  const InputError s = test::load_error(test::source_path(kDdp), {"design=ddp+ep3"});
  CHECK(s.file() == "--set");
  CHECK_THAT(s.message(), Contains("(value set by --set 'design=ddp+ep3')"));
  // A malformed design names the design and suggests.
  const InputError bad = compose_error(source, {{"design", "dpp+ep8"}});
  CHECK(bad.file() == "--design");
  CHECK(bad.path() == "dpp+ep8");
  CHECK_THAT(bad.message(), Contains("did you mean 'ddp'?"));
}

TEST_CASE("A section swapped for a file names that file, not the --set", "[unit]") {
  test::TempDir dir;
  nlohmann::json profile = read_json_file(test::source_path("hardware_profiles/h200-hgx.json"));
  profile["memory"]["fragmentation_fraction"]["value"] = 5;
  const std::string file = dir.write("bad-profile.json", profile.dump());
  const InputError e = test::load_error(test::source_path(kDdp), {"hardware=" + nlohmann::json(file).dump()});
  CHECK(e.file() == file);
  CHECK(e.path() == "memory.fragmentation_fraction.value");
}

TEST_CASE("Sizes in --set read with the parser --vary uses", "[unit]") {
  CHECK(parse_override("plan.batch.global_batch_tokens=4Mi", "--set").value == 4194304);
  CHECK(parse_override("plan.batch.global_batch_tokens=128Ki", "--set").value == 131072);
  CHECK(parse_override("x=8K", "--set").value == 8000);
  CHECK(parse_override("x=0.5Ki", "--set").value == 512);
  CHECK(parse_override("x=1.5", "--set").value == 1.5);
  CHECK(parse_override("x=4Mx", "--set").value == "4Mx");  // not a size: a bare word
  CHECK(parse_override("plan.design=fsdp", "--set").value == "fsdp");
  CHECK(parse_axis("x=4Mi").values == std::vector<nlohmann::json>{4194304});
  for (const std::string text : {"4Mi", "128Ki", "8K", "2G", "1Gi", "0.5M"})
    CHECK(parse_override("x=" + text, "--set").value == parse_axis("x=" + text).values.front());
  const Scenario s = load_scenario(test::source_path(kDdp), {"plan.batch.global_batch_tokens=2Mi"});
  CHECK(s.plan.global_batch_tokens == 2097152);
}

TEST_CASE("Allowed ranges print whole bounds exactly", "[unit]") {
  CHECK(Range::between(1, 1 << 20).describe() == "[1, 1048576]");
  CHECK(Range::between(1, 1e15).describe() == "[1, 1000000000000000]");
  CHECK(Range{0.0, 1.5, true}.describe() == "(0, 1.5]");
  CHECK(Range::at_least(0.25).describe() == ">= 0.25");
  CHECK(Range::positive().describe() == "> 0");
  const InputError e = test::load_error(test::source_path(kDdp), {"architecture.d_model=0"});
  CHECK_THAT(e.message(), Contains("allowed: [1, 1048576]"));
  const InputError t = test::load_error(test::source_path(kDdp), {"plan.batch.global_batch_tokens=\"lots\""});
  CHECK_THAT(t.message(), Contains("expected an integer in [1, 1000000000000000]"));
}

TEST_CASE("Edit distance counts insertions, deletions, substitutions and swaps", "[unit]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("abc", "abc") == 0);
  CHECK(edit_distance("ab", "ba") == 1);
  CHECK(edit_distance("expert_paralel", "expert_parallel") == 1);
  CHECK(closest_match("expert_paralel", {"pipeline", "expert_parallel", "fsdp"}) == "expert_parallel");
  CHECK(closest_match("zero3", {"fsdp", "ddp"}).empty());  // too far to be a typo
  CHECK(closest_match("ep", {"ep", "pp"}) == "pp");        // the word itself is not a suggestion
  CHECK(did_you_mean("plna", {"plan", "hardware"}) == "; did you mean 'plan'?");
  CHECK(did_you_mean("xyz", {"plan"}).empty());
  CHECK(did_you_mean("plna", {"plan"}, "allowed: plan") == "; did you mean 'plan'? allowed: plan");
  CHECK(did_you_mean("xyz", {"plan"}, "allowed: plan") == "; allowed: plan");
}

TEST_CASE("Unknown keys and names suggest the closest allowed one", "[unit]") {
  const std::string file = test::source_path(kDdp);
  CHECK_THAT(test::load_error(file, {"architecture.moe.num_expert=8"}).message(),
             Contains("did you mean 'num_experts'?"));
  CHECK_THAT(test::load_error(file, {"plan.optimizer.type=adamww"}).message(), Contains("did you mean 'adamw'?"));
  CHECK_THAT(test::load_error(file, {"plna.nodes=2"}).message(), Contains("did you mean 'plan'?"));
  CHECK_THAT(test::load_error(file, {"cost_models.gem=table"}).message(), Contains("did you mean 'gemm'?"));
  CHECK_THAT(test::load_error(file, {"flop_convention=plam"}).message(), Contains("did you mean 'palm'?"));
  CHECK_THAT(test::load_error(file, {"cost_models.gemm=tabel"}).message(), Contains("did you mean 'table'?"));
  CHECK_THAT(test::load_error(file, {"hardware.gpu.hbm_bw_GBs.value=1"}).message(),
             Contains("did you mean 'hbm_bw_GBps'?"));
  CHECK_THAT(unknown_name([] { design_overrides("ddp+epp8"); }), Contains("did you mean 'ep'?"));
  CHECK_THAT(unknown_name([] { design_overrides("fsdp+etp2"); }), Contains("+etp is a ddp part"));
  CHECK_THAT(unknown_name([] { design_overrides("megatron"); }), !Contains("did you mean"));
  CHECK_THAT(unknown_name([] { design_overrides("zero3"); }), Contains("did you mean 'zero2'?"));
  CHECK_THAT(unknown_name([] { parse_collective_kind("all_reduc"); }), Contains("did you mean 'all_reduce'?"));
  CHECK_THAT(unknown_name([] { gemm_cost_models().get("tabel"); }), Contains("did you mean 'table'?"));
  CHECK_THAT(unknown_name([] { resolve_profile("b300-hgz"); }), Contains("did you mean 'b300-hgx'?"));
  CHECK_THAT(unknown_name([] { resolve_profile("b300-hgz"); }),
             Contains("bundled profiles: a100-sxm-40gb, a100-sxm-80gb, b200-hgx"));
}

TEST_CASE("Input files may name their JSON Schema with \"$schema\"", "[unit]") {
  test::TempDir dir;
  nlohmann::json arch = read_json_file(test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json"));
  arch["$schema"] = "../schemas/moesim-architecture.schema.json";
  dir.write("arch.json", arch.dump());
  nlohmann::json doc = test::inline_fig8_document("ddp");
  doc["$schema"] = "schemas/moesim-scenario.schema.json";
  doc["plan"]["$schema"] = "schemas/moesim-plan.schema.json";
  doc["architecture"] = "arch.json";
  const std::string file = dir.write("scenario.json", doc.dump());
  const Scenario s = load_scenario(file, {});
  CHECK(s.arch.d_model == 4096);
  CHECK_FALSE(s.resolved["architecture"].contains("$schema"));  // reports hold what was simulated
  CHECK_FALSE(s.resolved["plan"].contains("$schema"));
  doc["$schema"] = 3;
  const InputError e = test::load_error(dir.write("bad.json", doc.dump()), {});
  CHECK(e.path() == "$schema");
  CHECK_THAT(e.message(), Contains("expected a string"));
  // Only at a document's root: elsewhere it is an unknown key.
  nlohmann::json nested = test::inline_fig8_document("ddp");
  nested["plan"]["batch"]["$schema"] = "x";
  CHECK(test::load_error(dir.write("nested.json", nested.dump()), {}).path() == "plan.batch.$schema");
}
