// Malformed inputs and impossible plans: each is rejected with the file, the exact JSON path and
// what is allowed. One table, one expectation per row.
#include <catch2/catch.hpp>

#include <functional>

#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
struct BadCase {
  std::string what;
  std::function<void(json&)> mutate;
  std::vector<std::string> sets;
  std::string file_suffix;  // which file the error must name ("scenario.json", "--set", ...)
  std::string path;         // exact JSON path
  std::string message;      // part of the message
};

const std::vector<BadCase>& cases() {
  static const std::vector<BadCase> table = {
      {"misspelt top-level key",
       [](json& d) { d["architectur"] = 1; },
       {},
       "scenario.json",
       "architectur",
       "unknown key; did you mean 'architecture'? allowed keys here: "},
      {"unknown architecture key",
       [](json& d) { d["architecture"]["moe"]["num_expert"] = 8; },
       {},
       "scenario.json",
       "architecture.moe.num_expert",
       "unknown key"},
      {"string instead of integer",
       [](json& d) { d["architecture"]["d_model"] = "4096"; },
       {},
       "scenario.json",
       "architecture.d_model",
       "expected an integer"},
      {"missing required field",
       [](json& d) { d["architecture"].erase("num_layers"); },
       {},
       "scenario.json",
       "architecture.num_layers",
       "required field is missing"},
      {"zero layers",
       [](json& d) { d["architecture"]["num_layers"] = 0; },
       {},
       "scenario.json",
       "architecture.num_layers",
       "out of range; allowed: [1, 4096]"},
      {"negative width",
       [](json& d) { d["architecture"]["d_model"] = -1; },
       {},
       "scenario.json",
       "architecture.d_model",
       "out of range"},
      {"fractional count",
       [](json& d) { d["architecture"]["d_model"] = 4096.5; },
       {},
       "scenario.json",
       "architecture.d_model",
       "expected an integer"},
      {"heads not a multiple of KV heads",
       [](json& d) { d["architecture"]["attention"]["num_kv_heads"] = 5; },
       {},
       "scenario.json",
       "architecture.attention.num_kv_heads",
       "multiple of num_kv_heads"},
      {"top-K above N",
       [](json& d) { d["architecture"]["moe"]["top_k"] = 64; },
       {},
       "scenario.json",
       "architecture.moe.top_k",
       "exceeds num_experts 48"},
      {"dense layer that does not exist",
       [](json& d) { d["architecture"]["dense_layers"] = {9}; },
       {},
       "scenario.json",
       "architecture.dense_layers[0]",
       "allowed: 0..7"},
      {"unknown design",
       [](json& d) { d["plan"]["design"] = "megatron"; },
       {},
       "scenario.json",
       "plan.design",
       "allowed: \"ddp\", \"fsdp\", \"zero2\""},
      {"zero GPUs",
       [](json& d) { d["plan"]["gpus_per_node"] = 0; },
       {},
       "scenario.json",
       "plan.gpus_per_node",
       "out of range"},
      {"world not divisible by PP",
       [](json& d) {
         d["plan"]["pipeline"] = {{"degree", 3}};
       },
       {},
       "scenario.json",
       "plan.pipeline.degree",
       "not divisible by PP degree 3"},
      {"more stages than layers",
       [](json& d) {
         d["plan"]["nodes"] = 2;
         d["plan"]["pipeline"] = {{"degree", 16}};
       },
       {},
       "scenario.json",
       "plan.pipeline.degree",
       "exceeds the 8 layers"},
      {"EP-MP not dividing N",
       [](json& d) {
         d["plan"]["nodes"] = 4;
         d["plan"]["expert_parallel"]["degree"] = 32;
       },
       {},
       "scenario.json",
       "plan.expert_parallel.degree",
       "does not divide the 48 routed experts"},
      {"EP-MP not dividing DP",
       [](json& d) { d["plan"]["expert_parallel"]["degree"] = 16; },
       {},
       "scenario.json",
       "plan.expert_parallel.degree",
       "does not divide the 8 ranks of a pipeline stage"},
      {"global batch below one microbatch per rank",
       [](json& d) { d["plan"]["batch"]["global_batch_tokens"] = 16384; },
       {},
       "scenario.json",
       "plan.batch.global_batch_tokens",
       "smaller than one microbatch"},
      {"global batch not a multiple",
       [](json& d) { d["plan"]["batch"]["global_batch_tokens"] = 131072 + 16384; },
       {},
       "scenario.json",
       "plan.batch.global_batch_tokens",
       "not a multiple"},
      {"layer split not summing to the layers",
       [](json& d) {
         d["plan"]["pipeline"] = {{"degree", 2}, {"layer_split", {3, 3}}};
       },
       {},
       "scenario.json",
       "plan.pipeline.layer_split",
       "must equal num_layers 8"},
      {"unknown optimizer",
       [](json& d) { d["plan"]["optimizer"]["type"] = "lion"; },
       {},
       "scenario.json",
       "plan.optimizer.type",
       "allowed: \"adamw\", \"muon\", \"sgd\""},
      {"EP on a dense model",
       [](json& d) {
         d["architecture"].erase("moe");
         d["architecture"].erase("dense_layers");
         d["plan"]["expert_parallel"]["degree"] = 8;
       },
       {},
       "scenario.json",
       "plan.expert_parallel.degree",
       "needs an MoE architecture"},
      {"capacity factor zero",
       [](json& d) {
         d["plan"]["routing"] = {{"capacity_factor", 0}};
       },
       {},
       "scenario.json",
       "plan.routing.capacity_factor",
       "out of range"},
      {"profile missing a field",
       [](json& d) { d["hardware"]["memory"].erase("fragmentation_fraction"); },
       {},
       "scenario.json",
       "hardware.memory.fragmentation_fraction",
       "required field is missing"},
      {"profile number without provenance",
       [](json& d) { d["hardware"]["gpu"]["hbm_bw_GBps"]["source"] = ""; },
       {},
       "scenario.json",
       "hardware.gpu.hbm_bw_GBps.source",
       "where the number comes from"},
      {"profile bare number",
       [](json& d) { d["hardware"]["gpu"]["peak_bf16_dense_TFLOPs"] = 2250; },
       {},
       "scenario.json",
       "hardware.gpu.peak_bf16_dense_TFLOPs",
       "expected an object"},
      {"fragmentation out of range",
       [](json& d) { d["hardware"]["memory"]["fragmentation_fraction"]["value"] = 0.95; },
       {},
       "scenario.json",
       "hardware.memory.fragmentation_fraction.value",
       "allowed: [0, 0.9]"},
      {"more GPUs per node than the profile",
       [](json& d) { d["plan"]["gpus_per_node"] = 16; },
       {},
       "scenario.json",
       "plan.gpus_per_node",
       "exceeds the 8 of one host of hardware profile"},
      {"capacity typed in MiB",
       [](json& d) { d["hardware"]["memory"]["usable_capacity_GiB"]["value"] = 80000; },
       {},
       "scenario.json",
       "hardware.memory.usable_capacity_GiB.value",
       "80000 GiB is not plausible; allowed: [1, 1024] GiB"},
      {"NVLink bandwidth typed in MB/s",
       [](json& d) { d["hardware"]["node"]["nvlink_bw_GBps_per_direction"]["value"] = 900000; },
       {},
       "scenario.json",
       "hardware.node.nvlink_bw_GBps_per_direction.value",
       "allowed: [1, 10000] GB/s"},
      {"peak typed in PFLOP/s",
       [](json& d) { d["hardware"]["gpu"]["peak_bf16_dense_TFLOPs"]["value"] = 2.25; },
       {},
       "scenario.json",
       "hardware.gpu.peak_bf16_dense_TFLOPs.value",
       "below 10 is PFLOP/s"},
      {"a step too large to replay",
       [](json& d) { d["plan"]["batch"]["global_batch_tokens"] = 999999999967232; },
       {},
       "scenario.json",
       "plan.batch.global_batch_tokens",
       "allowed: at most 131072 block passes per stage and step"},
      {"unknown FLOP convention",
       [](json& d) { d["flop_convention"] = "chinchilla"; },
       {},
       "scenario.json",
       "flop_convention",
       "valid: 6n, megatron, olmo-core, palm"},
      {"section file missing",
       [](json& d) { d["architecture"] = "no-such-file.json"; },
       {},
       "no-such-file.json",
       "",
       "cannot open file"},
      {"--set without '='", [](json&) {}, {"plan.nodes"}, "--set", "plan.nodes", "expected PATH=VALUE"},
      {"--set outside the sections",
       [](json&) {},
       {"foo.bar=1"},
       "--set",
       "foo.bar=1",
       "path must start with architecture, plan, hardware"},
      {"--set through a number",
       [](json&) {},
       {"plan.nodes.x=1"},
       "--set",
       "plan.nodes.x=1",
       "plan.nodes is not an object"},
      {"--set a misspelt key",
       [](json&) {},
       {"plan.batch.global_batch=5"},
       "--set",
       "plan.batch.global_batch",
       "unknown key"},
      {"--set an impossible value",
       [](json&) {},
       {"plan.expert_parallel.degree=5"},
       "--set",
       "plan.expert_parallel.degree",
       "does not divide the 48 routed experts"},
      {"--set wrong type",
       [](json&) {},
       {"architecture.num_layers=eight"},
       "--set",
       "architecture.num_layers",
       "expected an integer"},
  };
  return table;
}
}  // namespace

TEST_CASE("Bad inputs are rejected with file, JSON path and what is allowed", "[unit]") {
  REQUIRE(cases().size() >= 20);
  for (const auto& c : cases()) {
    test::TempDir dir;
    json doc = test::inline_fig8_document("ddp");
    c.mutate(doc);
    const std::string file = dir.write("scenario.json", doc.dump(2));
    INFO("case: " << c.what);
    try {
      load_scenario(file, c.sets);
      FAIL("accepted: " << c.what);
    } catch (const InputError& e) {
      INFO("error: " << e.what());
      CHECK(e.file().size() >= c.file_suffix.size());
      CHECK(e.file().compare(e.file().size() - c.file_suffix.size(), c.file_suffix.size(), c.file_suffix) == 0);
      CHECK(e.path() == c.path);
      CHECK_THAT(e.message(), Catch::Contains(c.message));
    }
  }
}

TEST_CASE("Malformed JSON names the line and column", "[unit]") {
  test::TempDir dir;
  const std::string file = dir.write("broken.json", "{\n  \"name\": \"x\",\n  \"plan\": {,}\n}\n");
  try {
    load_scenario(file, {});
    FAIL("accepted malformed JSON");
  } catch (const InputError& e) {
    CHECK(e.file() == file);
    CHECK_THAT(e.message(), Catch::Contains("malformed JSON at line 3, column 12"));
  }
}

TEST_CASE("A number too large for a double is an input error, not a crash", "[unit]") {
  test::TempDir dir;
  const std::string file = dir.write("huge.json", "{\"name\": 1e999}");
  CHECK_THROWS_AS(load_scenario(file, {}), InputError);
}

TEST_CASE("Errors in section files name that file and a path relative to it", "[unit]") {
  test::TempDir dir;
  json arch = read_json_file(test::source_path("scenarios/architectures/olmo-ddp-bench-moe.json"));
  arch["moe"]["top_k"] = 0;
  dir.write("arch.json", arch.dump());
  json doc = test::inline_fig8_document("ddp");
  doc["architecture"] = "arch.json";
  const std::string file = dir.write("scenario.json", doc.dump());
  try {
    load_scenario(file, {});
    FAIL("accepted top_k = 0");
  } catch (const InputError& e) {
    CHECK(e.file() == dir.path("arch.json"));
    CHECK(e.path() == "moe.top_k");
  }
}
