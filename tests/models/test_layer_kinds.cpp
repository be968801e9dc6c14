// The layer kinds beyond GQA + SwiGLU: sliding windows, MLA, non-gated MLPs, Mamba-2 mixers and
// hybrid patterns; their kernel costs by hand and their parse errors.
#include <cmath>

#include <catch2/catch.hpp>

#include "models/arch/flops.hpp"
#include "models/arch/inventory.hpp"
#include "models/common/json_reader.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/input/scenario.hpp"
#include "models/memory/activations.hpp"
#include "tests/sim/fake_costs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const HardwareProfile& b300() { return test::b300_profile(); }
double launch_s() { return b300().compute.kernel_launch_us.value * 1e-6; }
const AttentionCost& flash() { return attention_cost_models().get("flash"); }

// The architecture error of `arch` (a JSON text), or "" when it parses.
std::string arch_error(const std::string& arch) {
  try {
    parse_architecture(JsonReader(nlohmann::json::parse(arch), "arch.json", ""));
  } catch (const InputError& e) {
    return e.path() + ": " + e.message();
  }
  return "";
}
const std::string kHead = R"({"num_layers": 4, "d_model": 256, "vocab_size": 1000, "sequence_length": 512, )";
}  // namespace

TEST_CASE("A sliding window prices the keys each query reads", "[unit][layers]") {
  // gpt-oss-120b's window layer: 64 heads, 8 KV heads of 64, a 128-key window over 4096 tokens.
  AttentionShape s{.sequences = 1, .seq_len = 4096, .heads = 64, .kv_heads = 8, .head_dim = 64, .causal = true};
  s.window = 128;
  const AttentionTime t = flash().time(b300(), s);
  // Pairs by hand: the first 128 queries read 1..128 keys, the other 3968 read 128: S w - w^2/2.
  const double pairs = 4096.0 * 128 - 128.0 * 128 / 2;  // 516096
  const double fwd = 2 * pairs * 64 * (64 + 64);
  CHECK(t.forward.flops == Approx(fwd));
  CHECK(t.backward.flops == Approx(2.5 * fwd));
  // Reads Q, K, V and writes O whatever the window: 4096 tokens x (64 + 8 + 8 + 64) heads x 64 x 2 B.
  CHECK(t.forward.hbm_bytes == Approx(4096.0 * (64 + 8 + 8 + 64) * 64 * 2));
  const double compute = fwd / (b300().compute.attention_fwd_TFLOPs.value * 1e12);
  const double memory = t.forward.hbm_bytes / (b300().compute.hbm_sustained_GBps.value * 1e9);
  CHECK(t.forward.time_s == Approx(std::max(compute, memory) + launch_s()));
  // A window as long as the sequence is full causal attention.
  AttentionShape full = s;
  full.window = 0;
  s.window = 4096;
  CHECK(flash().time(b300(), s).forward.flops == Approx(flash().time(b300(), full).forward.flops));
  CHECK(flash().time(b300(), full).forward.flops == Approx(2.0 * 4096 * 4096 / 2 * 64 * 128));
}

TEST_CASE("MLA attention: q/k and v head widths apart", "[unit][layers]") {
  // DeepSeek-V3: 128 heads, q/k 192 wide (128 + 64 RoPE), v 128 wide.
  AttentionShape s{.sequences = 1, .seq_len = 4096, .heads = 128, .kv_heads = 128, .head_dim = 192, .causal = true};
  s.v_head_dim = 128;
  const AttentionTime t = flash().time(b300(), s);
  CHECK(t.forward.flops == Approx(2.0 * 4096 * 4096 / 2 * 128 * (192 + 128)));
  CHECK(t.forward.hbm_bytes == Approx(4096.0 * 128 * (192 + 192 + 128 + 128) * 2));
}

TEST_CASE("gpt-oss alternates window and full layers, each priced once", "[unit][layers]") {
  const Scenario s = test::gallery("gpt-oss-120b");
  CHECK(s.arch.layer(0).window == 128);
  CHECK(s.arch.layer(1).window == 0);
  CHECK(s.arch.layer(34).window == 128);
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const auto core = [&](std::int64_t layer) {
    const std::vector<double> rows(16, 4096.0 * 4 / 128);
    for (const LayerOp& op : layer_ops(s.arch, s.plan, costs, layer, 4096, rows).ops)
      if (op.kind == LayerOpKind::attention_core) return op.times.fwd;
    return 0.0;
  };
  CHECK(core(0) < 0.2 * core(1));  // 128 keys against 2048 on average
  CHECK(core(0) == core(2));
}

TEST_CASE("A Mamba-2 scan: SSD FLOPs and bytes by hand", "[unit][layers]") {
  // Nemotron-H-8B's mixer: 128 heads of 64, 8 groups, state 128, chunks of 128; 8192 tokens.
  const ScanShape s{8192, 128, 64, 8, 128, 128};
  // Per token: Q (G N + H P) = 128 (1024 + 8192) = 1179648; 4 H P N = 4194304.
  CHECK(ssd_flops_per_token(s) == 5373952);
  const AttentionTime t = flash().scan(b300(), s);
  CHECK(t.forward.flops == Approx(8192.0 * 5373952));
  CHECK(t.backward.flops == Approx(2 * 8192.0 * 5373952));
  // x and y (2 x 8192), B and C (2 x 1024), dt (128) in BF16; each chunk's FP32 state written and read.
  const double per_token = 2.0 * (2 * 8192 + 2 * 1024 + 128) + 2 * 4.0 * 128 * 64 * 128 / 128;
  CHECK(t.forward.hbm_bytes == Approx(8192 * per_token));
  CHECK(t.forward.time_s >= t.forward.flops / (b300().compute.attention_fwd_TFLOPs.value * 1e12));
}

TEST_CASE("A Mamba-2 scan on H100 runs at the measured chunk-scan rate for its sequence length", "[unit][layers]") {
  // mamba_ssm's Triton chunk scan on an H800 (the profile's points): 106 TFLOP/s at 4096 tokens per
  // sequence, 91 at 8192; log-length interpolation between, the backward at the forward's rate.
  const HardwareProfile h100 = test::bundled_profile("h100-hgx.json");
  ScanShape s{8192, 128, 64, 8, 128, 128, 8192};
  const AttentionTime at_8k = flash().scan(h100, s);
  CHECK(at_8k.forward.rate_TFLOPs == Approx(91));
  CHECK(at_8k.backward.rate_TFLOPs == Approx(91));
  // Compute-limited at this shape: the FLOPs over the rate, plus the launch.
  const double launch = h100.compute.kernel_launch_us.value * 1e-6;
  CHECK(at_8k.forward.time_s == Approx(at_8k.forward.flops / 91e12 + launch));
  CHECK(at_8k.backward.time_s == Approx(2 * at_8k.forward.flops / 91e12 + launch));
  s.seq_len = std::sqrt(4096.0 * 8192.0);
  CHECK(flash().scan(h100, s).forward.rate_TFLOPs == Approx((106 + 91) / 2.0));
  // A profile without the measurement keeps the attention rates.
  CHECK(flash().scan(b300(), s).forward.rate_TFLOPs == Approx(b300().compute.attention_fwd_TFLOPs.value));
}

TEST_CASE("A Mamba-2 layer's ops, an MLP-only layer's and an attention-only layer's", "[unit][layers]") {
  const Scenario s = test::gallery("nemotron-h-8b", {"plan.tensor_parallel.degree=1"});
  test::FakeCosts costs;
  costs.memory_s = 1e-4;
  costs.scan_s = 5e-3;
  REQUIRE(s.arch.layer_pattern.substr(0, 5) == "M-M-M");
  const LayerOps m = layer_ops(s.arch, s.plan, costs, 0, 8192, {});
  CHECK(test::kinds(m) == std::vector<LayerOpKind>{LayerOpKind::mixer_elementwise, LayerOpKind::mamba_in_projection,
                                                   LayerOpKind::ssd_scan, LayerOpKind::mamba_out_projection});
  // The scan op: the conv and gated norm (one memory-bound kernel each pass) and the SSD scan.
  CHECK(m.ops[2].times.fwd == Approx(1e-4 + 5e-3));
  CHECK(m.ops[2].times.bwd == Approx(1e-4 + 5e-3));
  // The projections: one GEMM forward, dgrad + wgrad backward.
  CHECK(m.ops[1].times.fwd == Approx(1e-3));
  CHECK(m.ops[1].times.bwd == Approx(2e-3));
  CHECK_FALSE(m.moe);
  const LayerOps mlp = layer_ops(s.arch, s.plan, costs, 1, 8192, {});
  CHECK(test::kinds(mlp) == std::vector<LayerOpKind>{LayerOpKind::dense_mlp});
  const LayerOps attention = layer_ops(s.arch, s.plan, costs, 7, 8192, {});
  REQUIRE(s.arch.layer_pattern[7] == '*');
  CHECK(test::kinds(attention) == std::vector<LayerOpKind>{LayerOpKind::attention_elementwise,
                                                           LayerOpKind::qkv_projection, LayerOpKind::attention_core,
                                                           LayerOpKind::output_projection});
  // Under TP 2 (the gallery's plan) a Mamba layer opens and closes a TP region like attention.
  const Scenario tp = test::gallery("nemotron-h-8b");
  const LayerOps m2 = layer_ops(tp.arch, tp.plan, costs, 0, 8192, {});
  CHECK(test::kinds(m2) == std::vector<LayerOpKind>{LayerOpKind::mixer_elementwise, LayerOpKind::tp_enter,
                                                    LayerOpKind::mamba_in_projection, LayerOpKind::ssd_scan,
                                                    LayerOpKind::mamba_out_projection, LayerOpKind::tp_exit,
                                                    LayerOpKind::residual});
}

TEST_CASE("A non-gated MLP has one up projection and 2 d h weights", "[unit][layers]") {
  const Scenario s = test::gallery("mpt-7b");
  const Inventory inv = build_inventory(s.arch);
  bool found = false;
  for (const TensorInfo& t : inv.tensors) {
    if (t.name != "blocks.0.mlp.w_up") continue;
    found = true;
    CHECK(t.shape == std::vector<std::int64_t>{16384, 4096});
  }
  CHECK(found);
  const FlopsPerToken f = flop_conventions().get("olmo-core").per_token(s.arch, inv);
  CHECK(f.dense_mlp == Approx(32 * 12.0 * 4096 * 16384));
}

TEST_CASE("Architecture errors name the key and what is allowed", "[unit][layers]") {
  const std::string gqa = R"("attention": {"num_heads": 4, "num_kv_heads": 2, "head_dim": 64)";
  CHECK(arch_error(kHead + gqa + R"(, "kv_lora_rank": 64}, "dense_hidden": 512})") ==
        "attention.kv_lora_rank: only used by \"kind\": \"mla\" (this attention is \"gqa\")");
  CHECK(arch_error(kHead + gqa + R"(, "window_pattern": [128, 0]}, "dense_hidden": 512})")
            .starts_with("attention.window_pattern[1]: a window of 0 keys attends to nothing"));
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "layer_pattern": "M-*"})")
            .starts_with("layer_pattern: has 3 characters but num_layers is 4"));
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "layer_pattern": "M-*x"})")
            .starts_with("layer_pattern: character 3 is 'x'; allowed: M (Mamba-2), * (attention), - (MLP), E (MoE)"));
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "layer_pattern": "M-*-"})") ==
        "mamba: required: layer_pattern has Mamba-2 layers (M)");
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "mlp": {"activation": "swish"}})")
            .starts_with("mlp.activation: "));
  CHECK(arch_error(kHead + R"("attention": {"kind": "mla", "num_heads": 4, "head_dim": 64, "kv_lora_rank": 64, )" +
                   R"("qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32}, "dense_hidden": 512})")
            .starts_with("attention.head_dim: not used by \"kind\": \"mla\""));
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "norm_bias": true})") ==
        "norm_bias: only a \"layernorm\" has a bias");
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "mlp": {"activation": "gelu", "bias": true}})") == "");
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "dropout": {"hidden": 1}})") ==
        "dropout.hidden: a dropout of 1 drops every element; allowed: 0 <= p < 1");
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "dropout": {"attention": -0.1}})")
            .starts_with("dropout.attention: "));
  CHECK(arch_error(kHead + gqa + R"(}, "dense_hidden": 512, "dropout": {"residual": 0.1}})")
            .starts_with("dropout.residual: unknown key"));
}

TEST_CASE("An MTP module adds a block, a projection and the head once more on the last stage", "[unit][layers]") {
  const Scenario with = test::gallery("deepseek-v3", {"plan.batch.global_batch_tokens=1048576"});
  Architecture without = with.arch;
  without.mtp_layers = 0;
  const ProfileCostBook costs(with.hardware, with.cost_models);
  const double T = 4096;
  const EdgeWork base = edge_work(without, with.plan, costs, T);
  const EdgeWork mtp = edge_work(with.arch, with.plan, costs, T);
  const PassTimes module = mtp_module(with.arch, with.plan, costs, T, base);
  CHECK(mtp.head.fwd == Approx(base.head.fwd + module.fwd));
  CHECK(mtp.head.bwd == Approx(base.head.bwd + module.bwd));
  CHECK(module.fwd > 1.5 * base.head.fwd);  // an MoE block besides the head once more
  // Memory: the module's saved block and its own loss buffers live from its forward to its
  // backward, on top of the main loss's.
  const LossBuffers one = loss_per_token(without, with.plan);
  const LossBuffers two = loss_per_token(with.arch, with.plan);
  const double block =
      saved_per_token(with.arch, 60, with.plan, routed_rows_per_token(with.arch, with.plan, 1.0)).total();
  CHECK(two.forward >= one.forward + block);
  CHECK(two.backward >= one.backward + block);
  CHECK(two.forward_steps.size() == 2 * one.forward_steps.size() + 1);
}
