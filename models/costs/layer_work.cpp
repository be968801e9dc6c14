#include "models/costs/layer_work.hpp"

#include <numeric>

#include "models/common/units.hpp"

namespace moesim {

namespace {

// Forward GEMM [T, in] x [in, out] and its backward pair: dgrad [T, out] x [out, in] and
// wgrad [out, T] x [T, in] (same FLOPs, 2x the forward).
PassTimes linear(const CostBook& c, double tokens, double in, double out) {
  return {c.gemm({tokens, out, in}), c.gemm({tokens, in, out}) + c.gemm({out, in, tokens})};
}

PassTimes add(PassTimes a, PassTimes b) { return {a.fwd + b.fwd, a.bwd + b.bwd}; }

// Causal flash attention over the microbatch's sequences (GQA: K/V heads from the architecture).
PassTimes attention(const Architecture& a, const CostBook& c, double tokens) {
  AttentionShape shape;
  shape.sequences = tokens / dbl(a.sequence_length);
  shape.seq_len = dbl(a.sequence_length);
  shape.heads = dbl(a.attention.num_heads);
  shape.kv_heads = dbl(a.attention.num_kv_heads);
  shape.head_dim = dbl(a.attention.head_dim);
  shape.causal = true;
  return {c.attention(shape, false), c.attention(shape, true)};
}

// Elementwise kernels: forward moves `bytes`; backward reads the saved input and the incoming
// gradient and writes the outgoing one, about twice the traffic.
PassTimes elementwise(const CostBook& c, double bytes) { return {c.memory(bytes), c.memory(2 * bytes)}; }

}  // namespace

LayerWork layer_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, std::int64_t layer, double T,
                     const std::vector<double>& rows) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model), q = dbl(a.attn_dim()), kv = dbl(a.kv_dim());
  LayerWork w;
  // Attention block: norm, QKV, (QK-norm), RoPE, flash attention, out-projection, residual.
  PassTimes attn = add(linear(c, T, d, q + 2 * kv), linear(c, T, q, d));
  attn = add(attn, attention(a, c, T));
  const double attn_elem = T * e * (2 * d + 2 * (q + kv) * (a.attention.qk_norm ? 2 : 1) + 3 * d);
  w.pre = add(attn, elementwise(c, attn_elem));
  if (!a.is_moe_layer(layer)) {
    const double h = dbl(a.dense_hidden);
    w.pre = add(w.pre, add(linear(c, T, d, 2 * h), linear(c, T, h, d)));
    w.pre = add(w.pre, elementwise(c, T * e * (2 * d + 3 * h + 3 * d)));
    w.selective_recompute = c.memory(T * e * 3 * h);
    return w;
  }
  const MoeSpec& m = *a.moe;
  const double K = dbl(m.top_k), N = dbl(m.num_experts), he = dbl(m.expert_hidden), hs = dbl(m.shared_hidden);
  const double routed = std::accumulate(rows.begin(), rows.end(), 0.0);
  w.moe = true;
  // Norm, router GEMM, FP32 softmax/top-K, permutation of the K routed copies of each token.
  w.pre = add(w.pre, linear(c, T, d, N));
  w.pre = add(w.pre, elementwise(c, T * (2 * d * e + 2 * N * 4) + T * K * d * e + T * d * e));
  // Up/gate [rows, d] x [d, 2h_e] and down [rows, h_e] x [h_e, d]; backward is dgrad + wgrad.
  const double up = c.grouped_gemm({rows, 2 * he, d}), down = c.grouped_gemm({rows, d, he});
  w.experts = {up + down, 2 * (up + down)};
  w.experts = add(w.experts, elementwise(c, routed * e * 3 * he));
  w.post = elementwise(c, T * K * d * e + T * d * e + 3 * T * d * e);
  for (std::int64_t s = 0; s < m.shared_experts; ++s) {
    w.shared = add(w.shared, add(linear(c, T, d, 2 * hs), linear(c, T, hs, d)));
    w.shared = add(w.shared, elementwise(c, T * e * 3 * hs));
  }
  // Dispatch sends every routed copy (the off-rank share is the collective model's business);
  // a skewed rank's receive side is larger, and the slower side sets its time.
  w.a2a_bytes = std::max(T * K, routed) * d * e;
  w.selective_recompute = c.memory(routed * e * 3 * he + T * e * 3 * hs);
  return w;
}

EdgeWork edge_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, double T) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model), V = dbl(a.vocab_size);
  EdgeWork w;
  // Embedding lookup; backward scatters the gradient rows into the embedding gradient.
  w.embed = {c.memory(2 * T * d * e), c.memory(T * d * (e + 4 + 4))};
  // Final norm, LM head GEMM, cross-entropy over FP32 logits (standard) or fused.
  w.head = add(linear(c, T, d, V), elementwise(c, 2 * T * d * e));
  const double ce = plan.loss == LossImpl::standard ? T * V * (e + 4 + 4) : T * V * e;
  w.head = add(w.head, {c.memory(ce), c.memory(ce)});
  return w;
}

}  // namespace moesim
