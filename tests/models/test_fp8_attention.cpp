// FP8 and MXFP8 attention (plan.precision.attention: Megatron-Core's fp8_dot_product_attention,
// Transformer Engine's FP8 DotProductAttention on cuDNN's fused attention), priced at the rates
// NVIDIA's cudnn-frontend SDPA benchmark published for that GPU (compute.fp8_attention /
// mxfp8_attention by sequence length); refused where no such measurement exists or the plan's
// attention kernel is not cuDNN's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/costs/layer_ops.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
// Qwen3-30B-A3B on a GB200 NVL72 rack, 4096-token sequences: a point of the measured tables.
const std::string kGb200 = "scenarios/gb200-nvl72-qwen3-30b-a3b-ep32.json";

Scenario gb200(const std::vector<std::string>& sets) { return load_scenario(test::source_path(kGb200), sets); }

PassTimes core_attention(const Scenario& s) {
  const ProfileCostBook costs(s.hardware, s.cost_models);
  // EP 32 over 128 experts: 4 local ones, the even share of 4096 tokens' top-8 rows each.
  const LayerOps l = layer_ops(s.arch, s.plan, costs, 0, 4096, std::vector<double>(4, 4096.0 * 8 / 128));
  for (const auto& op : l.ops)
    if (op.kind == LayerOpKind::attention_core) return op.times;
  FAIL("no attention core op");
  return {};
}
}  // namespace

TEST_CASE("FP8 and MXFP8 attention take the rates cuDNN measured for them on that GPU", "[unit]") {
  const Scenario bf16 = gb200({});
  const Scenario fp8 = gb200({"plan.precision.attention=\"fp8\""});
  const Scenario mx = gb200({"plan.precision.attention=\"mxfp8\""});
  const double launch = bf16.hardware.compute.kernel_launch_us.value * 1e-6;
  const PassTimes b = core_attention(bf16), f = core_attention(fp8), m = core_attention(mx);
  // cudnn-frontend llama3.1/gb200 at 4096 tokens, causal: BF16 1408 / 1148, FP8 1805 / 1178,
  // MXFP8 1685 / 1054 TFLOP/s (forward / backward): the same FLOPs at those rates.
  CHECK(f.fwd - launch == Approx((b.fwd - launch) * 1408.0 / 1805.0).epsilon(1e-9));
  CHECK(f.bwd - launch == Approx((b.bwd - launch) * 1148.0 / 1178.0).epsilon(1e-9));
  CHECK(m.fwd - launch == Approx((b.fwd - launch) * 1408.0 / 1685.0).epsilon(1e-9));
  CHECK(m.bwd - launch == Approx((b.bwd - launch) * 1148.0 / 1054.0).epsilon(1e-9));
  // The step is shorter by the forward's gain and no GEMM moves.
  const StepResult rb = simulate(bf16).result, rf = simulate(fp8).result;
  CHECK(rf.step_time_s < rb.step_time_s);
  // The H200's published FP8 backward is slower than its BF16 at long sequences (cuDNN 9.19:
  // 370 against 581 TFLOP/s at 32k); the table is taken as measured.
  const Scenario h200 =
      load_scenario(test::source_path(kGb200), {"hardware=\"../hardware_profiles/h200-hgx.json\"", "plan.nodes=8",
                                                "plan.gpus_per_node=8", "plan.precision.attention=\"fp8\""});
  REQUIRE(h200.hardware.compute.attention_bwd_TFLOPs_by_seq_len);
  CHECK(h200.hardware.compute.attention_bwd_TFLOPs_by_seq_len->points().back().y == 370);
}

TEST_CASE("FP8 attention is refused where no measurement exists or another kernel runs", "[unit]") {
  // B200 / B300 / H100 / A100: no published FP8 attention rates.
  const InputError none =
      test::load_error(test::source_path(kGb200), {"hardware=\"../hardware_profiles/b300-hgx.json\"", "plan.nodes=8",
                                                   "plan.gpus_per_node=8", "plan.precision.attention=\"fp8\""});
  const std::string what = none.what();
  CHECK(what.find("plan.precision.attention") != std::string::npos);
  CHECK(what.find("compute.fp8_attention") != std::string::npos);
  CHECK(what.find("allowed here: bf16") != std::string::npos);
  // The H200 has FP8 but no MXFP8 attention (Hopper has no MXFP8 tensor cores).
  const InputError mx =
      test::load_error(test::source_path(kGb200), {"hardware=\"../hardware_profiles/h200-hgx.json\"", "plan.nodes=8",
                                                   "plan.gpus_per_node=8", "plan.precision.attention=\"mxfp8\""});
  CHECK(std::string(mx.what()).find("allowed here: bf16, fp8") != std::string::npos);
  // FP8 attention is cuDNN's kernel: the unfused core attention cannot run it.
  const InputError unfused = test::load_error(
      test::source_path(kGb200), {"plan.precision.attention=\"fp8\"", "plan.kernels={\"attention\": \"unfused\"}"});
  CHECK(std::string(unfused.what()).find("cuDNN") != std::string::npos);
}
