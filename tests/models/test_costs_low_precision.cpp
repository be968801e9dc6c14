// FP8 / MXFP8 linears: the format's GEMM rates, the quantization kernels around them, the weight
// caches of Olmo-core's DDP path, and the plan/profile checks.
#include <catch2/catch.hpp>

#include <cmath>

#include "models/common/json_reader.hpp"
#include "models/costs/layer_work.hpp"
#include "models/costs/low_precision.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/plan/design_spec.hpp"
#include "sim/step_simulation.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
HardwareProfile profile(const std::string& file) { return test::bundled_profile(file); }
double both(PassTimes t) { return t.fwd + t.bwd; }
}  // namespace

TEST_CASE("MXFP8 element bytes follow the OCP MX layout, quantizing reads BF16 once", "[unit]") {
  CHECK(quantized_bytes_per_element(GemmPrecision::mxfp8) == Approx(1.0 + 1.0 / 32));
  CHECK(quantized_bytes_per_element(GemmPrecision::fp8) == 1.0);
  CHECK(quantize_traffic_per_element(GemmPrecision::mxfp8) == Approx(2 + 1 + 1.0 / 32));
  CHECK(quantize_traffic_per_element(GemmPrecision::fp8) == Approx(2 + 2 + 1));  // amax pass, then cast
  CHECK(quantize_traffic_per_element(GemmPrecision::bf16) == 0);
  CHECK(weight_cache_bytes_per_param(GemmPrecision::mxfp8) == Approx(2 * (1 + 1.0 / 32)));
}

TEST_CASE("A linear quantizes X in forward, dY twice and X again in backward, caches drop the weight casts", "[unit]") {
  const QuantizeKernels uncached = linear_quantize_kernels(1000, 64, 128, 64 * 128, false);
  CHECK(uncached.fwd == std::vector<double>{1000 * 64, 64 * 128});
  CHECK(uncached.bwd == std::vector<double>{1000 * 128, 64 * 128, 1000 * 128, 1000 * 64});
  const QuantizeKernels cached = linear_quantize_kernels(1000, 64, 128, 64 * 128, true);
  CHECK(cached.fwd == std::vector<double>{1000 * 64});
  CHECK(cached.bwd == std::vector<double>{1000 * 128, 1000 * 128, 1000 * 64});
}

TEST_CASE("FP8 GEMMs run at the profile's measured ratio over BF16 and never at BF16 cost or above FP8 peak",
          "[unit]") {
  const HardwareProfile b300 = profile("b300-hgx.json");
  const ProfileCostBook book(b300);
  for (double rows : {256.0, 1024.0, 4096.0, 65536.0}) {
    const GemmShape bf16{rows, 8192, 8192, GemmPass::forward};
    GemmShape fp8 = bf16;
    fp8.precision = GemmPrecision::mxfp8;
    const double ratio = interpolate_log_x(b300.compute.mxfp8_gemm->gemm_over_bf16_by_rows, rows);
    const double launch = b300.compute.kernel_launch_us.value * 1e-6;
    CHECK((book.gemm(bf16) - launch) / (book.gemm(fp8) - launch) == Approx(ratio).epsilon(1e-9));
    const double fp8_TFLOPs = 2 * rows * 8192 * 8192 / (book.gemm(fp8) - launch) / 1e12;
    CHECK(fp8_TFLOPs <= b300.gpu.peak_fp8_dense_TFLOPs->value);
  }
}

// torchao's MXFP8 grouped-GEMM benchmark on B200 (pytorch/ao torchao/prototype/moe_training/
// README.md, commit 0b1bb117): forward + backward of M = 128000 rows over G experts, with the
// dynamic quantization of activations and weights inside the timed op. Llama4 shape N = 8192,
// K = 5120: BF16 over MXFP8 1.808 (G=1), 1.690 (2), 1.637 (4), 1.700 (8).
TEST_CASE("[kernel] torchao's B200 MXFP8 grouped GEMM speedups, weights quantized per use, within 15%", "[unit]") {
  const HardwareProfile b200 = profile("b200-hgx.json");
  const ProfileCostBook book(b200);
  const std::pair<int, double> published[] = {{1, 1.808}, {2, 1.690}, {4, 1.637}, {8, 1.700}};
  for (const auto& [experts, speedup] : published) {
    const std::vector<double> rows(static_cast<std::size_t>(experts), 128000.0 / experts);
    const double bf16 = both(grouped(book, {GemmPrecision::bf16, false}, rows, 8192, 5120));
    const double mx = both(grouped(book, {GemmPrecision::mxfp8, false}, rows, 8192, 5120));
    INFO("experts " << experts << ": modelled " << bf16 / mx << ", published " << speedup);
    CHECK(bf16 / mx == Approx(speedup).epsilon(0.15));
  }
}

// The same benchmark's DeepSeek-V3 shape (N = 2048, K = 7168) scatters more across G (1.188, 1.321,
// 1.595, 1.440): its mean is what the model is held to. A known gap (hardware_profiles/README.md,
// "Known limits"): the format's ratio is keyed by rows at N = K = 4096, and a narrower N gains less,
// so the model's mean speedup lies above the published one, by 16% on B200's measured BF16 rates.
TEST_CASE("[kernel] torchao's B200 MXFP8 grouped GEMM on the DeepSeek-V3 shape, mean 0-20% above (a known gap)",
          "[unit]") {
  const HardwareProfile b200 = profile("b200-hgx.json");
  const ProfileCostBook book(b200);
  double modelled = 0;
  for (int experts : {1, 2, 4, 8}) {
    const std::vector<double> rows(static_cast<std::size_t>(experts), 128000.0 / experts);
    modelled += both(grouped(book, {GemmPrecision::bf16, false}, rows, 2048, 7168)) /
                both(grouped(book, {GemmPrecision::mxfp8, false}, rows, 2048, 7168)) / 4;
  }
  const double published = (1.188 + 1.321 + 1.595 + 1.440) / 4;
  CHECK(modelled > published);
  CHECK(modelled < 1.2 * published);
}

TEST_CASE("Quantization is what separates the MXFP8 speedup from the raw GEMM ratio", "[unit]") {
  const HardwareProfile b300 = profile("b300-hgx.json");
  const ProfileCostBook book(b300);
  const PassTimes bf16 = linear(book, {GemmPrecision::bf16, true}, 16384, 4096, 14336);
  const PassTimes cached = linear(book, {GemmPrecision::mxfp8, true}, 16384, 4096, 14336);
  const PassTimes uncached = linear(book, {GemmPrecision::mxfp8, false}, 16384, 4096, 14336);
  const double raw = interpolate_log_x(b300.compute.mxfp8_gemm->gemm_over_bf16_by_rows, 16384);
  CHECK(both(bf16) / both(cached) < raw);
  CHECK(both(bf16) / both(cached) > 1.0);
  CHECK(both(uncached) > both(cached));
  CHECK(both(quantization(book, {GemmPrecision::bf16, false}, 16384, 4096, 14336, 4096.0 * 14336)) == 0);
}

TEST_CASE("MXFP8 experts: a faster DDP+EP8 step, the same FLOP count, and weight caches in the ledger", "[unit]") {
  Scenario bf16 = test::fig8("ddp-ep8", 32);
  Scenario mx = bf16;
  mx.plan.precision.linears[static_cast<std::size_t>(LinearClass::routed_expert)] = GemmPrecision::mxfp8;
  const StepResult a = simulate(bf16, SimOptions{}).result;
  const StepResult b = simulate(mx, SimOptions{}).result;
  CHECK(b.step_time_s < a.step_time_s);
  CHECK(b.flops.total == a.flops.total);  // MFU keeps the BF16 convention: same FLOPs, BF16 peak
  CHECK(b.mfu * b.step_time_s == Approx(a.mfu * a.step_time_s));

  const test::LedgerRun with = test::run_ledger(mx);
  const test::LedgerRun without = test::run_ledger(bf16);
  const auto cache_bytes = [](const MemoryLedger& l) {
    double out = 0;
    for (const auto& item : l.stages.front().persistent) {
      if (item.name == "low-precision weight caches") out += item.bytes;
    }
    return out;
  };
  CHECK(cache_bytes(without.ledger) == 0);
  double experts = 0;
  for (const auto& lt : stage_tensors(with.inventory, mx.arch, mx.plan, 0)) {
    if (lt.tensor->cls == TensorClass::routed_expert) experts += lt.local_numel;
  }
  CHECK(cache_bytes(with.ledger) == Approx(experts * 2 * (1 + 1.0 / 32)));
}

TEST_CASE("FSDP2 quantizes gathered weights on use and keeps no caches", "[unit]") {
  Scenario s = test::fig8("fsdp", 32);
  CHECK_FALSE(s.plan.precision.weight_caches);
  s.plan.precision.linears[static_cast<std::size_t>(LinearClass::routed_expert)] = GemmPrecision::mxfp8;
  const test::LedgerRun run = test::run_ledger(s);
  for (const auto& item : run.ledger.stages.front().persistent) CHECK(item.name != "low-precision weight caches");
}

TEST_CASE("Plans asking for a format the profile lacks, FSDP caches or a router format are refused", "[unit]") {
  const std::string ddp = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const std::string h100 = "hardware=" + test::source_path("hardware_profiles/h100-hgx.json");
  try {
    (void)load_scenario(ddp, {"plan.precision.linears.routed_expert=mxfp8", h100});
    FAIL("accepted mxfp8 on H100");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("plan.precision.linears.routed_expert") != std::string::npos);
    CHECK(std::string(e.what()).find("mxfp8_gemm") != std::string::npos);
  }
  CHECK_THROWS_AS(
      load_scenario(test::source_path("scenarios/fig8/moe-fsdp.json"), {"plan.precision.weight_caches=true"}),
      InputError);
  CHECK_THROWS_AS(load_scenario(ddp, {"plan.precision.linears.router=mxfp8"}), InputError);
  CHECK_THROWS_AS(load_scenario(ddp, {"plan.precision.linears.attention=fp4"}), InputError);
}

TEST_CASE("FP8 dispatch sends the forward rows at 1 + 1/32 bytes, combine and backward stay BF16", "[unit]") {
  const std::string file = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
  const Scenario bf16 = load_scenario(file, {"plan.precision.linears.routed_expert=mxfp8"});
  const Scenario fp8 =
      load_scenario(file, {"plan.precision.linears.routed_expert=mxfp8", "plan.precision.ep_dispatch=mxfp8"});
  const auto a2a = [](const Scenario& s) {
    const StepResult r = simulate(s, SimOptions{}).result;  // kept: the bytes are read from it
    const auto& b = r.bytes_per_rank[static_cast<std::size_t>(CollectiveKind::all_to_all)];
    return b[0] + b[1];
  };

  // Four transfers per layer and microbatch; one of them (the forward dispatch) shrinks.
  CHECK(a2a(fp8) / a2a(bf16) == Approx((3 + (1 + 1.0 / 32) / 2) / 4));
  CHECK_THROWS_AS(load_scenario(file, {"plan.precision.ep_dispatch=mxfp8"}), InputError);
}

TEST_CASE("The +mxfp8 design part converts every linear but the LM head, and names itself back", "[unit]") {
  const std::string file = test::source_path("scenarios/fig8/moe-ddp.json");
  const Scenario s = load_scenario(file, {"design=ddp+ep8+mxfp8"});
  for (LinearClass c :
       {LinearClass::attention, LinearClass::dense_mlp, LinearClass::shared_expert, LinearClass::routed_expert}) {
    CHECK(s.plan.precision.linear(c) == GemmPrecision::mxfp8);
  }
  CHECK(s.plan.precision.linear(LinearClass::lm_head) == GemmPrecision::bf16);
  CHECK(design_name(s.plan) == "ddp+ep8+mxfp8");
  const Scenario one = load_scenario(file, {"plan.precision.linears.routed_expert=fp8"});
  CHECK(design_name(one.plan) == "ddp+routed_expert-fp8");
}

TEST_CASE("The ledger holds the running GEMM's quantized inputs, BF16 plans hold none", "[unit]") {
  const QuantizeKernels k = linear_quantize_kernels(1000, 64, 128, 64 * 128, false);
  CHECK(quantized_operand_bytes(GemmPrecision::mxfp8, k, true) ==
        Approx((1000 * 128 * 2 + 64 * 128 + 1000 * 64) * (1 + 1.0 / 32)));
  CHECK(quantized_operand_bytes(GemmPrecision::bf16, k, true) == 0);
  const auto quantized = [](const Scenario& s) {
    double out = 0;
    const test::LedgerRun run = test::run_ledger(s);  // kept alive while its phases are walked
    for (const auto& phase : run.ledger.stages.front().phases) {
      for (const auto& item : phase.items) {
        if (item.cls == MemClass::quantized_operands) out = std::max(out, item.bytes);
      }
    }
    return out;
  };
  Scenario s = test::fig8("fsdp", 32);
  CHECK(quantized(s) == 0);
  s.plan.precision.linears[static_cast<std::size_t>(LinearClass::routed_expert)] = GemmPrecision::mxfp8;
  CHECK(quantized(s) > 0);
}
