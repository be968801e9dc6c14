// The LM head's loss paths (models/costs/loss_paths.hpp): the buffers each allocates per token,
// computed by hand from the op sequence its source runs, and what each costs the step's head.
#include <catch2/catch.hpp>

#include "models/costs/layer_work.hpp"
#include "models/costs/loss_paths.hpp"
#include "models/costs/profile_cost_book.hpp"
#include "models/input/scenario.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
// BF16 activations, d = 1000, a rank's vocabulary of 10000: e*d = 2000, e*v = 20000, FP32 v = 40000.
const LossShape kShape{2, 1000, 10000};
}  // namespace

TEST_CASE("each loss path holds the buffers its source allocates, per token", "[unit][loss]") {
  struct Case {
    LossImpl impl;
    double forward, held, backward;
  };
  const Case cases[] = {
      // Eager: input + logits + FP32 upcast + FP32 log-probs; keeps input + log-probs; backward
      // adds nll's and log_softmax's FP32 gradients.
      {LossImpl::standard, 2000 + 20000 + 40000 + 40000, 2000 + 40000, 2000 + 40000 + 40000 + 40000},
      // Compiled: input + BF16 logits + 2 FP32 row statistics kept; backward adds the BF16 gradient.
      {LossImpl::compiled, 2000 + 20000 + 8, 2000 + 20000 + 8, 2000 + 20000 + 8 + 20000},
      // flash-attn: the same with one FP32 log-sum-exp.
      {LossImpl::flash_attn, 2000 + 20000 + 4, 2000 + 20000 + 4, 2000 + 20000 + 4 + 20000},
      // Liger: only the head input's gradient outlives the forward.
      {LossImpl::fused, 2000, 2000, 4000},
      // Megatron: logits + one FP32 buffer (the softmax, in place); backward casts its gradient.
      {LossImpl::vocab_parallel, 2000 + 20000 + 40000, 2000 + 40000, 2000 + 40000 + 20000},
      // Fused: the backward's jit-fused function returns a new FP32 gradient beside the saved
      // softmax, then its BF16 cast.
      {LossImpl::vocab_parallel_fused, 2000 + 20000 + 40000, 2000 + 40000, 2000 + 40000 + 40000 + 20000},
      // Transformer Engine: the FP32 gradient made in forward takes the softmax's place.
      {LossImpl::te, 2000 + 20000 + 40000, 2000 + 40000, 2000 + 40000 + 20000},
      // Cut Cross-Entropy: input + FP32 log-sum-exp; backward writes the input gradient.
      {LossImpl::cut, 2004, 2004, 4004},
  };
  for (const Case& c : cases) {
    INFO(kLossImplNames.name(c.impl));
    const LossBuffers b = loss_buffers(c.impl, kShape);
    CHECK(b.forward == Approx(c.forward));
    CHECK(b.backward == Approx(c.backward));
    // What is held between forward and backward: the forward's allocations net of its frees.
    std::vector<double> sizes;
    const auto net = [&sizes](const std::vector<LossBuffers::Step>& steps) {
      double change = 0;
      for (const auto& step : steps) {
        if (step.frees >= 0) {
          change -= sizes[static_cast<std::size_t>(step.frees)];
        } else {
          sizes.push_back(step.bytes);
          change += step.bytes;
        }
      }
      return change;
    };
    const double held = net(b.forward_steps);
    CHECK(held == Approx(c.held));
    // Every buffer is freed by the end of the backward.
    const double live = held + net(b.backward_steps);
    CHECK(live == Approx(0).margin(1e-9));
  }
}

TEST_CASE("a loss path's kernels and recomputed head GEMM are what the head costs", "[unit][loss]") {
  const Scenario s = load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {});
  const ProfileCostBook costs(s.hardware, s.cost_models);
  const double T = 8192, V = static_cast<double>(s.arch.vocab_size), e = 2;
  ParallelPlan plan = s.plan;
  const auto head = [&](LossImpl impl) {
    plan.loss = impl;
    return edge_work(s.arch, plan, costs, T).head;
  };
  const auto ce = [&](double bytes_per_logit) {
    return costs.memory(T * V * bytes_per_logit, MemoryKernel::cross_entropy);
  };
  const PassTimes eager = head(LossImpl::standard), compiled = head(LossImpl::compiled), cut = head(LossImpl::cut);
  // The same GEMMs and final norm; only the cross-entropy kernels differ: eager writes the logits,
  // reads them, writes FP32 log-probs (e + 8 per logit); compiled reads the BF16 logits twice.
  CHECK(compiled.fwd - eager.fwd == Approx(ce(2 * e) - ce(e + 8)));
  CHECK(compiled.bwd - eager.bwd == Approx(ce(2 * e) - ce(e + 8)));
  CHECK(compiled.wgrad == eager.wgrad);
  // Megatron's unfused path: upcast, max, in-place subtract, exp, sum and divide (e + 36), then
  // the in-place scale and the BF16 cast (e + 12).
  const PassTimes megatron = head(LossImpl::vocab_parallel);
  CHECK(megatron.fwd - eager.fwd == Approx(ce(e + 36) - ce(e + 8)));
  CHECK(megatron.bwd - eager.bwd == Approx(ce(e + 12) - ce(e + 8)));
  // Fused: upcast + max (e + 4), subtract/exp/sum (8), divide (8); backward read 4, write 4 + e.
  const PassTimes fused = head(LossImpl::vocab_parallel_fused);
  CHECK(fused.fwd - eager.fwd == Approx(ce(e + 20) - ce(e + 8)));
  CHECK(fused.bwd - eager.bwd == Approx(ce(e + 8) - ce(e + 8)));
  // Transformer Engine: two reads of the logits and the FP32 gradient written; backward as Megatron's.
  const PassTimes te = head(LossImpl::te);
  CHECK(te.fwd - eager.fwd == Approx(ce(2 * e + 4) - ce(e + 8)));
  CHECK(te.bwd - eager.bwd == Approx(ce(e + 12) - ce(e + 8)));
  // Cut Cross-Entropy runs no cross-entropy kernel over HBM but the head GEMM once more in backward.
  const double gemm_forward =
      costs.gemm({T, V, static_cast<double>(s.arch.d_model), GemmPass::forward, GemmPrecision::bf16});
  CHECK(cut.fwd == Approx(eager.fwd - ce(e + 8)));
  CHECK(cut.bwd == Approx(eager.bwd - ce(e + 8) + gemm_forward));
}

TEST_CASE("the plan names a loss path, an unknown one lists the paths", "[unit][loss]") {
  for (const auto& name : loss_paths().names()) {
    const Scenario s =
        load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {"plan.activations.loss=\"" + name + "\""});
    CHECK(kLossImplNames.name(s.plan.loss) == name);
  }
  CHECK_THROWS_WITH(
      load_scenario(test::source_path("scenarios/fig8/dense-ddp.json"), {"plan.activations.loss=\"liger\""}),
      Catch::Contains("plan.activations.loss") && Catch::Contains("compiled") && Catch::Contains("vocab_parallel"));
}
