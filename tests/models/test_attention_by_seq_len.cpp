// Attention rates by tokens per sequence (compute.attention_*_TFLOPs_by_seq_len): the NVL72 and
// B200 profiles' tables from NVIDIA's cuDNN runs, the lookup a shape takes (between, beyond, under a
// causal window), and the tables following a power limit and giving way to another kernel.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/costs/compute_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
// The forward rate a causal attention shape of `seq_len` tokens (and a window) is priced at.
double forward_rate(const HardwareProfile& hw, double seq_len, double window = 0) {
  AttentionShape s;
  s.sequences = 1;
  s.seq_len = seq_len;
  s.heads = 64;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.window = window;
  return attention_cost_models().get("flash").time(hw, s).forward.rate_TFLOPs;
}
}  // namespace

TEST_CASE("A profile's attention table prices each sequence length at its measured rate", "[unit]") {
  const HardwareProfile gb200 = test::bundled_profile("gb200-nvl72.json");
  REQUIRE(gb200.compute.attention_fwd_TFLOPs_by_seq_len);
  // NVIDIA's cuDNN 9.22 run on GB200 (cudnn-frontend results/llama3.1/gb200): 1097 at 2k, 1574 at 8k.
  CHECK(forward_rate(gb200, 2048) == Approx(1097));
  CHECK(forward_rate(gb200, 8192) == Approx(1574));
  // Between two points, log-length interpolation: 2896 tokens is halfway from 2k to 4k.
  CHECK(forward_rate(gb200, 2896.309) == Approx((1097 + 1408) / 2.0).epsilon(1e-4));
  // Beyond the table, the nearest point.
  CHECK(forward_rate(gb200, 1024) == Approx(1097));
  CHECK(forward_rate(gb200, 131072) == Approx(1622));
  // A causal window of 1024 keys in an 8k sequence reads as a 2k causal sequence does.
  CHECK(forward_rate(gb200, 8192, 1024) == Approx(1097));
  // A profile without a table keeps its one rate at every length.
  const HardwareProfile b300 = test::bundled_profile("b300-hgx.json");
  CHECK_FALSE(b300.compute.attention_fwd_TFLOPs_by_seq_len);
  CHECK(forward_rate(b300, 2048) == forward_rate(b300, 32768));
}

TEST_CASE("B200's attention table is NVIDIA's cuDNN 9.10 run, its one rate kept for kernels without a length",
          "[unit]") {
  const HardwareProfile b200 = test::bundled_profile("b200-hgx.json");
  REQUIRE(b200.compute.attention_fwd_TFLOPs_by_seq_len);
  REQUIRE(b200.compute.attention_bwd_TFLOPs_by_seq_len);
  // cudnn-frontend sdpa_benchmark_bf16_training at f937055 (B200, cuDNN 9.10.2, 128 / 8 heads):
  // forward 525.5 at 2k, 1211.1 at 8k; backward 383.7 at 2k, 1132.4 at 32k.
  CHECK(forward_rate(b200, 2048) == Approx(525.5));
  CHECK(forward_rate(b200, 8192) == Approx(1211.1));
  AttentionShape s;
  s.sequences = 1;
  s.seq_len = 32768;
  s.heads = 128;
  s.kv_heads = 8;
  s.head_dim = 128;
  CHECK(attention_cost_models().get("flash").time(b200, s).backward.rate_TFLOPs == Approx(1132.4));
  // The short end is measured too (1k: 216.1), not clamped to the 2k rate.
  CHECK(forward_rate(b200, 1024) == Approx(216.1));
  // SimuMax's Transformer Engine median (0.731 x 2250 / 2) stays the one rate.
  CHECK(b200.compute.attention_fwd_TFLOPs.value == 823);
  CHECK(b200.compute.attention_kernel == AttentionKernel::cudnn);
}

TEST_CASE("The attention tables follow a power limit and give way to another kernel's rates", "[unit]") {
  json doc = read_json_file(test::source_path("hardware_profiles/gb200-nvl72.json"));
  doc["gpu"]["power_limit_W"] = 1000;
  doc["compute"]["gemm_TFLOPs_by_power_limit"] = {
      {"kind", "assumption"},
      {"source", "test"},
      {"points",
       json::array({{{"power_limit_W", 1000}, {"TFLOPs", 1200}}, {{"power_limit_W", 1200}, {"TFLOPs", 1500}}})}};
  const HardwareProfile limited = parse_hardware_profile(JsonReader(doc, "gb200-limited.json", ""));
  CHECK(forward_rate(limited, 2048) == Approx(1097 * 1200.0 / 1500));
  // A plan that calls a kernel the profile lists separately is priced at that kernel's one rate.
  doc = read_json_file(test::source_path("hardware_profiles/gb200-nvl72.json"));
  doc["compute"]["attention_by_kernel"] = {
      {"flash_attn_2",
       {{"fwd_TFLOPs", {{"value", 500}, {"kind", "assumption"}, {"source", "test"}}},
        {"bwd_TFLOPs", {{"value", 400}, {"kind", "assumption"}, {"source", "test"}}}}}};
  test::TempDir dir;
  const std::string file = dir.path("gb200-fa2.json");
  std::ofstream(file) << doc.dump();
  const Scenario fa2 = load_scenario(test::source_path("scenarios/gb200-nvl72-qwen3-30b-a3b-ep32.json"),
                                     {"hardware=" + file, "plan.kernels={\"attention\": \"flash_attn_2\"}"});
  CHECK_FALSE(fa2.hardware.compute.attention_fwd_TFLOPs_by_seq_len);
  CHECK(forward_rate(fa2.hardware, 2048) == 500);
}
