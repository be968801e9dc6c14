// GEMM, grouped GEMM, attention and memory-bound kernel costs on the B300 profile.
#include <catch2/catch.hpp>

#include <cmath>

#include "models/common/json_reader.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/input/scenario.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const HardwareProfile& b300() { return test::b300_profile(); }
const GemmCost& gemm() { return gemm_cost_models().get("table"); }
const GroupedGemmCost& grouped() { return grouped_gemm_cost_models().get("table"); }
double launch_s() { return b300().compute.kernel_launch_us.value * 1e-6; }
}  // namespace

TEST_CASE("Interpolation hits the table points exactly and is monotone between them", "[unit]") {
  const ProfileTable& t = b300().compute.gemm_bf16_TFLOPs_by_rows;
  for (const auto& p : t.points()) CHECK(interpolate_log_x(t, p.x) == p.y);
  for (std::size_t i = 0; i + 1 < t.points().size(); ++i) {
    const auto lo = t.points()[i], hi = t.points()[i + 1];
    double previous = lo.y;
    for (int s = 1; s < 50; ++s) {
      const double x = std::exp(std::log(lo.x) + s / 50.0 * (std::log(hi.x) - std::log(lo.x)));
      const double y = interpolate_log_x(t, x);
      CHECK(y >= std::min(lo.y, hi.y));
      CHECK(y <= std::max(lo.y, hi.y));
      if (hi.y >= lo.y)
        CHECK(y >= previous);
      else
        CHECK(y <= previous);
      previous = y;
    }
  }
  // Geometric midpoint of 128 and 256 rows: halfway in log space.
  CHECK(interpolate_log_x(t, std::sqrt(128.0 * 256.0)) == Approx((854.0 + 1126.0) / 2));
  // Clamped at both ends.
  CHECK(interpolate_log_x(t, 1) == 854);
  CHECK(interpolate_log_x(t, 1e9) == 1411);
}

TEST_CASE("Dense GEMM reproduces the measured rate on the table's own shape", "[unit]") {
  // Report Table 44 shape: [T, 8192] x [8192, 81920].
  for (const auto& p : b300().compute.gemm_bf16_TFLOPs_by_rows.points()) {
    if (p.x < 1024) continue;  // small T sits near the HBM roofline; checked below
    const KernelTime t = gemm().time(b300(), {p.x, 81920, 8192});
    INFO("rows " << p.x);
    CHECK_FALSE(t.memory_bound);
    CHECK(t.flops == 2.0 * p.x * 81920 * 8192);
    CHECK(t.time_s == Approx(t.flops / (p.y * 1e12) + launch_s()));
    CHECK(t.achieved_TFLOPs == Approx(p.y).epsilon(0.01));
  }
}

TEST_CASE("The HBM roofline floor binds for tiny GEMMs", "[unit]") {
  const double hbm = b300().compute.hbm_sustained_GBps.value * 1e9;
  // A GEMV-like GEMM: 1 row against a 8192 x 8192 weight is all weight traffic.
  const KernelTime t = gemm().time(b300(), {1, 8192, 8192});
  CHECK(t.memory_bound);
  CHECK(t.hbm_bytes == 2.0 * (8192 + 8192.0 * 8192 + 8192));
  CHECK(t.time_s == Approx(t.hbm_bytes / hbm + launch_s()));
  CHECK(t.achieved_TFLOPs < 10);
  // A very small GEMM costs about the launch overhead.
  const KernelTime tiny = gemm().time(b300(), {16, 16, 16});
  CHECK(tiny.time_s == Approx(launch_s()).epsilon(0.01));
  // A big square GEMM is compute-bound.
  CHECK_FALSE(gemm().time(b300(), GemmShape{16384, 8192, 4096}).memory_bound);
}

TEST_CASE("Grouped GEMM is slower per FLOP than dense at small rows per expert", "[unit]") {
  const double n = 4096, k = 4096;
  // 64 experts x 16 rows vs the same 1024 rows as one dense GEMM.
  const KernelTime g = grouped().time(b300(), {std::vector<double>(64, 16), n, k});
  const KernelTime d = gemm().time(b300(), {1024, n, k});
  CHECK(g.flops == Approx(d.flops));
  CHECK(g.achieved_TFLOPs < d.achieved_TFLOPs);
  CHECK(g.rate_TFLOPs == Approx(0.615 * 1381));  // efficiency at 16 rows x dense rate at 1024 rows
  // At 256-4096 total rows over 8 experts the published ratio is ~0.95.
  const KernelTime g8 = grouped().time(b300(), {std::vector<double>(8, 512), n, k});
  CHECK(g8.rate_TFLOPs == Approx(0.95 * dense_gemm_rate_TFLOPs(b300(), 4096)));
}

TEST_CASE("The most-loaded expert bounds a grouped GEMM from below", "[unit]") {
  const double n = 4096, k = 4096;
  std::vector<double> skewed(32, 64);
  skewed[0] = 16384;  // one hot expert
  const KernelTime g = grouped().time(b300(), {skewed, n, k});
  const KernelTime hot = gemm().time(b300(), {16384, n, k});
  CHECK(g.time_s >= hot.time_s - 1e-12);
  // Balanced routing of the same rows is faster than the skewed one.
  double total = 0;
  for (double r : skewed) total += r;
  const KernelTime balanced = grouped().time(b300(), {std::vector<double>(32, total / 32), n, k});
  CHECK(balanced.time_s < g.time_s);
  // Empty experts cost nothing beyond the launch; all-empty is just the launch.
  CHECK((grouped().time(b300(), {std::vector<double>(8, 0), n, k}).time_s) == Approx(launch_s()));
  CHECK_THROWS_AS((grouped().time(b300(), {std::vector<double>{}, n, k})), InputError);
  CHECK_THROWS_AS((grouped().time(b300(), {std::vector<double>{-1.0}, n, k})), InputError);
}

TEST_CASE("Flash attention counts causal FLOPs and backward as 2.5x forward", "[unit]") {
  AttentionShape s{.sequences = 2, .seq_len = 8192, .heads = 32, .kv_heads = 8, .head_dim = 128, .causal = true};
  const AttentionTime t = attention_cost_models().get("flash").time(b300(), s);
  const double fwd = 4.0 * 8192.0 * 8192.0 / 2 * 32 * 128 * 2;  // 4·S·S/2·heads·head_dim per sequence
  CHECK(t.forward.flops == Approx(fwd));
  CHECK(t.backward.flops == Approx(2.5 * fwd));
  CHECK(t.forward.time_s == Approx(fwd / (b300().compute.attention_fwd_TFLOPs.value * 1e12) + launch_s()));
  CHECK(t.backward.time_s == Approx(2.5 * fwd / (b300().compute.attention_bwd_TFLOPs.value * 1e12) + launch_s()));
  s.causal = false;
  CHECK(attention_cost_models().get("flash").time(b300(), s).forward.flops == Approx(2 * fwd));
}

TEST_CASE("Memory-bound kernels take bytes over the copy rate times their class's fraction, plus the launch",
          "[unit]") {
  const MemoryBoundCost& m = memory_bound_cost_models().get("hbm");
  const double gib = 1024.0 * 1024 * 1024;
  const double copy_Bps = b300().compute.hbm_sustained_GBps.value * 1e9;
  CHECK(m.time(b300(), gib, MemoryKernel::copy).time_s == Approx(gib / copy_Bps + launch_s()));
  for (std::size_t k = 0; k < kMemoryKernels; ++k) {
    const auto kind = static_cast<MemoryKernel>(k);
    const double fraction = b300().compute.hbm_fraction_by_kernel[k].value;
    INFO(name_of(kind));
    CHECK(fraction > 0);
    CHECK(fraction <= 1);
    CHECK(m.time(b300(), gib, kind).time_s == Approx(gib / (copy_Bps * fraction) + launch_s()));
  }
  CHECK(m.time(b300(), 0, MemoryKernel::copy).time_s == Approx(launch_s()));
  CHECK_THROWS_AS(m.time(b300(), -1, MemoryKernel::copy), InputError);
}

TEST_CASE("Backward GEMM passes run at the profile's ratios of the forward rate", "[unit]") {
  const HardwareProfile& hw = b300();
  const double fwd = gemm().time(hw, {8192, 8192, 8192, GemmPass::forward}).time_s;
  const double dgrad = gemm().time(hw, {8192, 8192, 8192, GemmPass::dgrad}).time_s;
  const double wgrad = gemm().time(hw, {8192, 8192, 8192, GemmPass::wgrad}).time_s;
  const double launch = launch_s();
  CHECK((dgrad - launch) == Approx((fwd - launch) / hw.compute.gemm_dgrad_over_forward.value));
  CHECK((wgrad - launch) == Approx((fwd - launch) / hw.compute.gemm_wgrad_over_forward.value));
  // Grouped weight gradients are the weakest class at a few hundred rows per expert (SimuMax B200).
  const std::vector<double> rows(32, 256);
  const double g_fwd = grouped().time(hw, {rows, 4096, 4096, GemmPass::forward}).time_s;
  const double g_wgrad = grouped().time(hw, {rows, 4096, 4096, GemmPass::wgrad}).time_s;
  const double ratio = interpolate_log_x(hw.compute.grouped_gemm_wgrad_over_forward_by_rows_per_expert, 256);
  CHECK(ratio < 1);
  CHECK((g_wgrad - launch) == Approx((g_fwd - launch) / ratio).epsilon(1e-9));
}

TEST_CASE("Cost model registries list the valid names for an unknown one", "[unit]") {
  CHECK_THROWS_WITH(gemm_cost_models().get("roofline"), Catch::Contains("valid: table"));
  CHECK_THROWS_WITH(grouped_gemm_cost_models().get("x"), Catch::Contains("valid: table"));
  CHECK_THROWS_WITH(attention_cost_models().get("x"), Catch::Contains("valid: flash"));
  CHECK_THROWS_WITH(memory_bound_cost_models().get("x"), Catch::Contains("valid: hbm"));
  CHECK_THROWS_AS(gemm().time(b300(), GemmShape{0, 1, 1}), InputError);
}
