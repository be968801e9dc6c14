#include "models/memory/activations.hpp"

#include <algorithm>
#include <iterator>

#include "models/common/units.hpp"

namespace moesim {

namespace {
constexpr double kFp32 = 4.0;   // router logits and the attention log-sum-exp are FP32
constexpr double kIndex = 8.0;  // int64 expert indices
}  // namespace

RoutedRows routed_rows_per_token(const Architecture& a, const ParallelPlan& plan, double load_factor) {
  if (!a.moe) return {};
  const double K = dbl(a.moe->top_k);
  RoutedRows r;
  r.computed = plan.routing.dropless ? K * load_factor : K * plan.routing.capacity_factor;
  r.dispatch = r.computed;
  if (plan.ep > 1 && plan.ep_transport == EpTransport::symmetric_memory) {
    r.dispatch = K * plan.ep_buffer_capacity_factor;
    r.computed = std::min(r.computed, r.dispatch);
  }
  return r;
}

namespace {

// torchtitan's op-level checkpointing of a dense block (see the header): the block input, the
// flash-attention outputs and the outputs of the odd-numbered matmuls in call order.
BlockActivations op_checkpointed(const Architecture& a, double e) {
  const double d = dbl(a.d_model), q = dbl(a.attn_dim()), kv = dbl(a.kv_dim()), h = dbl(a.dense_hidden);
  // Output widths of the block's matmuls in call order: wq, wk, wv, wo, then w1, w3, w2.
  constexpr std::size_t kAttentionMatmuls = 4;
  const double widths[] = {q, kv, kv, d, h, h, d};
  BlockActivations b;
  b.attention = e * d + e * q + kFp32 * dbl(a.attention.num_heads);  // input, attention output, LSE
  for (std::size_t i = 0; i < std::size(widths); i += 2) {           // the 1st, 3rd, ... matmul
    (i < kAttentionMatmuls ? b.attention : b.mlp) += e * widths[i];
  }
  return b;
}

BlockActivations saved_without_checkpointing(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                             const RoutedRows& routed) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model), q = dbl(a.attn_dim()), kv = dbl(a.kv_dim());
  BlockActivations b;
  // Attention: norm input and output (QKV GEMM input), optional q/k before QK-norm, q/k/v after
  // RoPE (flash-attention inputs), the attention output (also the out-projection input), LSE.
  b.attention = e * d + e * d + (a.attention.qk_norm ? e * (q + kv) : 0.0) + e * (q + 2 * kv) + e * q +
                kFp32 * dbl(a.attention.num_heads);
  const bool recompute_swiglu = plan.recompute == Recompute::selective;
  if (a.is_moe_layer(layer)) {
    const MoeSpec& m = *a.moe;
    const double K = dbl(m.top_k), h = dbl(m.expert_hidden), hs = dbl(m.shared_hidden);
    const double rows = routed.computed;
    // Norm input/output, FP32 router logits, FP32 probs + int64 indices of the top-K.
    b.mlp = e * d + e * d + kFp32 * dbl(m.num_experts) + K * (kFp32 + kIndex);
    // The dispatched input (the grouped GEMM's saved input); per routed row: up/gate output,
    // SwiGLU product (down input), expert output kept for the combine weights' gradient.
    b.mlp += routed.dispatch * e * d + rows * (e * 2 * h + (recompute_swiglu ? 0.0 : e * h) + e * d);
    b.mlp += dbl(m.shared_experts) * (e * 2 * hs + (recompute_swiglu ? 0.0 : e * hs));
  } else {
    const double h = dbl(a.dense_hidden);
    b.mlp = e * d + e * d + e * 2 * h + (recompute_swiglu ? 0.0 : e * h);
  }
  return b;
}

}  // namespace

BlockActivations saved_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                 const RoutedRows& routed) {
  const double e = bytes_of(plan.precision.compute);
  switch (plan.recompute) {
    case Recompute::full: return {e * dbl(a.d_model), 0.0};
    case Recompute::selective_op: return op_checkpointed(a, e);
    case Recompute::none:
    case Recompute::selective: break;
  }
  return saved_without_checkpointing(a, layer, plan, routed);
}

double recomputed_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                            const RoutedRows& routed) {
  switch (plan.recompute) {
    case Recompute::full: return saved_without_checkpointing(a, layer, plan, routed).total();
    case Recompute::selective_op:
      return saved_without_checkpointing(a, layer, plan, routed).total() -
             op_checkpointed(a, bytes_of(plan.precision.compute)).total();
    case Recompute::none:
    case Recompute::selective: break;
  }
  return 0.0;
}

double backward_working_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                  const RoutedRows& routed) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model);
  // Residual-stream gradient in and out, plus the widest internal gradient of the block.
  double widest = e * (dbl(a.attn_dim()) + 2 * dbl(a.kv_dim()));
  if (a.is_moe_layer(layer)) {
    widest = std::max(widest, routed.computed * e * 2 * dbl(a.moe->expert_hidden));
  } else {
    widest = std::max(widest, e * 2 * dbl(a.dense_hidden));
  }
  return 2 * e * d + widest;
}

LossBuffers loss_per_token(const Architecture& a, const ParallelPlan& plan) {
  const double e = bytes_of(plan.precision.compute);
  const double v = dbl(a.vocab_size), d = dbl(a.d_model);
  LossBuffers l;
  if (plan.loss == LossImpl::standard) {
    // PyTorch cross-entropy on upcast logits (torchtitan's cross_entropy_loss; Olmo-core's
    // default LM-head loss): the final-norm output (0) is kept for the head's backward; the BF16
    // logits (1) are upcast (2); log_softmax keeps its FP32 output (3) and frees the upcast copy;
    // the trainer drops the logits (torchtitan's `del pred`). Backward: nll_loss's dense FP32
    // gradient (4) and log_softmax's FP32 gradient (5) are alive with the log-probabilities
    // (aten _log_softmax_backward_data), then the BF16 logits gradient (6) and the hidden-state
    // gradient (7).
    l.forward_steps = {{e * d}, {e * v}, {kFp32 * v}, {kFp32 * v}, {0, 2}, {0, 1}};
    l.backward_steps = {{kFp32 * v}, {kFp32 * v}, {0, 4}, {0, 3}, {e * v}, {0, 5}, {e * d}, {0, 6}, {0, 0}, {0, 7}};
  } else {
    // Fused linear cross-entropy: logits never held whole; the gradient w.r.t. the final hidden
    // state is the only full-size buffer.
    l.forward_steps = {{e * d}};
    l.backward_steps = {{e * d}, {0, 0}, {0, 1}};
  }
  std::vector<double> sizes;
  double live = 0;
  auto walk = [&](const std::vector<LossBuffers::Step>& steps, double& peak) {
    for (const auto& st : steps) {
      if (st.frees >= 0) {
        live -= sizes[static_cast<std::size_t>(st.frees)];
      } else {
        sizes.push_back(st.bytes);
        live += st.bytes;
      }
      peak = std::max(peak, live);
    }
  };
  walk(l.forward_steps, l.forward);
  l.backward = live;
  walk(l.backward_steps, l.backward);
  return l;
}

}  // namespace moesim
