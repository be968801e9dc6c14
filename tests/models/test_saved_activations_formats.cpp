// What a block saves for backward under each low-precision library, by format, hand-computed on
// the Figure 8 model (d = 4096, 32 query and 8 KV heads of 128 with QK-norm, dense MLP hidden
// 20480, 64 experts of hidden 4096, top-4, one shared expert of 4096), per token, BF16 compute:
//   torchao keeps each converted linear's BF16 input (ctx.save_for_backward(input_hp, ...));
//   Transformer Engine keeps a column-wise quantized copy (1 B per element, + 1/32 for MXFP8).
#include <catch2/catch.hpp>

#include "models/memory/activations.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

constexpr double kMx = 1.0 + 1.0 / 32;  // MXFP8: one byte and one E8M0 scale per 32 elements

Scenario fig8_with(LowPrecisionLibrary library, GemmPrecision format) {
  Scenario s = test::fig8("ddp", 64);
  for (auto& linear : s.plan.precision.linears) linear = format;
  s.plan.precision.linears[static_cast<std::size_t>(LinearClass::lm_head)] = GemmPrecision::bf16;
  s.plan.precision.library = library;
  return s;
}

double format_bytes(const BlockActivations& b, SavedFormat f) { return b.by_format[static_cast<std::size_t>(f)]; }

void check_split_adds_up(const BlockActivations& b) {
  double sum = 0;
  for (const double x : b.by_format) sum += x;
  CHECK(sum == Approx(b.total()).epsilon(1e-12));
}

}  // namespace

TEST_CASE("Saved activations per library: a dense block, hand-computed", "[unit]") {
  const RoutedRows none{};
  // BF16, or any FP8 recipe under torchao: norm in + out 2 x 8192; q, k before QK-norm 10240;
  // q, k, v after RoPE and the attention output 20480; LSE 32 x 4 = 128; MLP: norm in + out
  // 16384, up/gate output 2 x 2 x 20480, SwiGLU product 2 x 20480.
  for (const GemmPrecision f : {GemmPrecision::bf16, GemmPrecision::fp8, GemmPrecision::mxfp8}) {
    const Scenario s = fig8_with(LowPrecisionLibrary::torchao, f);
    const BlockActivations b = saved_per_token(s.arch, 0, s.plan, none);
    CHECK(b.attention == 47232);
    CHECK(b.mlp == 139264);
    CHECK(format_bytes(b, SavedFormat::fp32) == 128);
    check_split_adds_up(b);
  }
  // Transformer Engine MXFP8: the two norm outputs (QKV and up/gate inputs, LayerNormLinear) and
  // the SwiGLU product (the down projection's input) are kept column-wise quantized.
  const Scenario te = fig8_with(LowPrecisionLibrary::transformer_engine, GemmPrecision::mxfp8);
  const BlockActivations b = saved_per_token(te.arch, 0, te.plan, none);
  CHECK(b.attention == 47232 - 8192 + 4096 * kMx);
  CHECK(b.mlp == 139264 - 8192 + 4096 * kMx - 40960 + 20480 * kMx);
  CHECK(format_bytes(b, SavedFormat::mxfp8) == (4096 + 4096 + 20480) * kMx);
  check_split_adds_up(b);
  // Tensorwise FP8 keeps one byte per element (Hopper: the transpose only; Blackwell: the data).
  const Scenario te8 = fig8_with(LowPrecisionLibrary::transformer_engine, GemmPrecision::fp8);
  CHECK(format_bytes(saved_per_token(te8.arch, 0, te8.plan, none), SavedFormat::fp8) == 4096 + 4096 + 20480);
}

TEST_CASE("Saved activations per library: an MoE block, hand-computed", "[unit]") {
  // Four routed rows per token (top-4, dropless, even load) and as many dispatched.
  const RoutedRows rows{4, 4, 4, 4};
  const Scenario bf16 = fig8_with(LowPrecisionLibrary::torchao, GemmPrecision::bf16);
  const BlockActivations b = saved_per_token(bf16.arch, 1, bf16.plan, rows);
  // Norm in + out 16384; FP32 logits 4 x 64 and top-4 probs 16; int64 indices 32; dispatched
  // input 4 x 8192; per row up/gate 16384, SwiGLU product 8192, expert output 8192; shared expert
  // up/gate 16384 and product 8192.
  CHECK(b.mlp == 16384 + 272 + 32 + 32768 + 4 * 32768 + 24576);
  CHECK(format_bytes(b, SavedFormat::int64) == 32);
  check_split_adds_up(b);
  // Transformer Engine MXFP8: the grouped GEMMs' inputs (dispatched rows, SwiGLU products) and
  // the shared expert's product are quantized; the shared expert keeps its own quantized copy of
  // the norm output, which the router keeps in BF16.
  const Scenario te = fig8_with(LowPrecisionLibrary::transformer_engine, GemmPrecision::mxfp8);
  const BlockActivations t = saved_per_token(te.arch, 1, te.plan, rows);
  CHECK(t.mlp ==
        Approx(16384 + 272 + 32 + 4 * 4096 * kMx + 4 * (16384 + 4096 * kMx + 8192) + 4096 * kMx + 16384 + 4096 * kMx)
            .epsilon(1e-12));
  CHECK(t.mlp < b.mlp);
  check_split_adds_up(t);
  // FP8 dispatch: the rows arrive quantized and the grouped GEMM keeps them as they are, under
  // either library.
  Scenario dispatched = fig8_with(LowPrecisionLibrary::torchao, GemmPrecision::fp8);
  dispatched.plan.precision.ep_dispatch = GemmPrecision::fp8;
  const BlockActivations d = saved_per_token(dispatched.arch, 1, dispatched.plan, rows);
  CHECK(format_bytes(d, SavedFormat::fp8) == 4 * 4096);
  CHECK(d.mlp == b.mlp - 4 * 4096);
}

TEST_CASE("The ledger shows the saved activations by format", "[unit]") {
  Scenario s = fig8_with(LowPrecisionLibrary::transformer_engine, GemmPrecision::mxfp8);
  s.plan.ep = 8;
  const auto r = test::run_ledger(s);
  const PhaseSet& forward = r.ledger.stages.at(0).phases.front();
  const LedgerItem& saved = forward.items.front();
  REQUIRE(saved.name == "saved activations");
  double sum = 0;
  bool mx = false;
  for (const auto& [format, bytes] : saved.by_format) {
    sum += bytes;
    mx = mx || format == "mxfp8";
  }
  CHECK(mx);
  CHECK(sum == Approx(saved.bytes).epsilon(1e-12));
}
