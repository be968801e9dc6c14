// The DGX A100 profiles (hardware_profiles/a100-sxm-80gb.json, a100-sxm-40gb.json) against the
// kernel-level and collective measurements their fields cite: nccl-tests on 8 x A100, the
// FlashAttention-2 A100 benchmark, the best measured BF16 matmul, BabelStream; and what an
// Ampere node cannot do (FP8 linears, NVLink SHARP).
#include <catch2/catch.hpp>

#include "models/common/errors.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

TEST_CASE("A100 profiles: 312 TFLOP/s BF16, no FP8 or NVLS, HBM and capacity per part", "[unit]") {
  const HardwareProfile big = test::bundled_profile("a100-sxm-80gb.json");
  const HardwareProfile small = test::bundled_profile("a100-sxm-40gb.json");
  for (const HardwareProfile* hw : {&big, &small}) {
    CHECK(hw->gpu.peak_bf16_TFLOPs.value == 312);
    CHECK_FALSE(hw->gpu.peak_fp8_dense_TFLOPs.has_value());
    CHECK_FALSE(hw->compute.fp8_gemm.has_value());
    CHECK_FALSE(hw->compute.mxfp8_gemm.has_value());
    CHECK_FALSE(hw->interconnect.intra_node.nvls.has_value());
    CHECK(hw->node.nvlink_bw_GBps_per_direction.value == 300);
    CHECK(hw->node.nic_bw_Gbps_per_gpu.value == 200);
  }
  CHECK(big.gpu.hbm_bw_GBps.value == 2039);
  CHECK(small.gpu.hbm_bw_GBps.value == 1555);
  CHECK(big.memory.usable_capacity_GiB.value == 80);
  CHECK(small.memory.usable_capacity_GiB.value == 40);
  // An FP8 plan is refused, naming the missing rates.
  try {
    test::gallery("llama3-8b", {"hardware=" + test::source_path("hardware_profiles/a100-sxm-80gb.json"),
                                "plan.precision.linears.dense_mlp=fp8"});
    FAIL("an FP8 linear on A100 was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("compute.fp8_gemm"));
  }
}

TEST_CASE("A100 profile: the collective model meets nccl-tests on one DGX A100", "[unit]") {
  // all_reduce_perf -g 8 on one A100 node: 229.0 / 233.9 / 234.9 GB/s busbw at 1 / 4 / 16 GB
  // (stas00/ml-engineering network/README.md); busbw = S x 2 (n - 1) / n / t.
  const HardwareProfile hw = test::bundled_profile("a100-sxm-80gb.json");
  const ProfileCostBook book(hw);
  const std::pair<double, double> measured[] = {{1e9, 229.0}, {4e9, 233.9}, {16e9, 234.9}};
  for (const auto& [bytes, busbw] : measured) {
    CAPTURE(bytes);
    CollectiveRequest request;
    request.kind = CollectiveKind::all_reduce;
    request.bytes = bytes;
    request.ranks = 8;
    request.ranks_per_node = 8;
    const CommCost c = book.collective(request);
    CHECK(bytes * 2 * 7 / 8 / c.time_s / 1e9 == Approx(busbw).epsilon(0.03));
  }
}

TEST_CASE("A100 profile: GEMM, flash attention and streaming kernels at the cited rates", "[unit]") {
  const HardwareProfile hw = test::bundled_profile("a100-sxm-80gb.json");
  const ProfileCostBook book(hw);
  const double launch = hw.compute.kernel_launch_us.value * 1e-6;
  // A large BF16 GEMM at most the best measured A100 SXM matmul (271.2 TFLOP/s) and within 2% of it.
  const GemmShape big{8192, 8192, 8192, GemmPass::forward};
  const double gemm_TFLOPs = 2.0 * 8192 * 8192 * 8192 / (book.gemm(big) - launch) / 1e12;
  CHECK(gemm_TFLOPs <= 271.2);
  CHECK(gemm_TFLOPs == Approx(271.2).epsilon(0.02));
  // FlashAttention-2 forward + backward, head dim 128, causal, 16k tokens per batch: 173 TFLOP/s at
  // 4k tokens and 182 at 8k (Dao 2023 Figure 4). Forward 4 s^2 h d / 2 (causal), backward 2.5x.
  for (const auto& [seq, published] : {std::pair{4096.0, 173.0}, std::pair{8192.0, 182.0}}) {
    CAPTURE(seq);
    const AttentionShape a{16384 / seq, seq, 16, 16, 128, true};
    const double fwd_flops = 4 * (16384 / seq) * seq * seq * 16 * 128 / 2;
    const double t = book.attention(a, false) + book.attention(a, true) - 2 * launch;
    CHECK(3.5 * fwd_flops / t / 1e12 == Approx(published).epsilon(0.04));
  }
}
