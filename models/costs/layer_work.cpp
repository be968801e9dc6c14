#include "models/costs/layer_work.hpp"

#include <numeric>

#include "models/common/units.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/low_precision.hpp"

namespace moesim {

namespace {

constexpr double kFp32 = bytes_of(DType::fp32);

PassTimes add(PassTimes a, PassTimes b) { return {a.fwd + b.fwd, a.bwd + b.bwd, a.wgrad + b.wgrad}; }

Format format_of(const ParallelPlan& plan, LinearClass c) {
  return {plan.precision.linear(c), plan.precision.weight_caches, false};
}

}  // namespace

PassTimes quantization(const CostBook& c, Format f, double rows, double in, double out, double weight_elements) {
  PassTimes t;
  if (f.gemm == GemmPrecision::bf16) return t;
  const double traffic = quantize_traffic_per_element(f.gemm);
  const QuantizeKernels k = linear_quantize_kernels(rows, in, out, weight_elements, f.weight_caches, f.input_quantized);
  for (double n : k.fwd) t.fwd += c.memory(n * traffic, MemoryKernel::elementwise);
  for (double n : k.bwd) t.bwd += c.memory(n * traffic, MemoryKernel::elementwise);
  return t;
}

PassTimes linear(const CostBook& c, Format f, double tokens, double in, double out) {
  const GemmPrecision g = f.gemm;
  const double wgrad = c.gemm({out, in, tokens, GemmPass::wgrad, g});
  const PassTimes gemms{c.gemm({tokens, out, in, GemmPass::forward, g}),
                        c.gemm({tokens, in, out, GemmPass::dgrad, g}) + wgrad, wgrad};
  return add(gemms, quantization(c, f, tokens, in, out, in * out));
}
PassTimes grouped(const CostBook& c, Format f, const std::vector<double>& rows, double n, double k) {
  const GemmPrecision g = f.gemm;
  const double wgrad = c.grouped_gemm({rows, n, k, GemmPass::wgrad, g});
  const PassTimes gemms{c.grouped_gemm({rows, n, k, GemmPass::forward, g}),
                        c.grouped_gemm({rows, k, n, GemmPass::dgrad, g}) + wgrad, wgrad};
  const double routed = std::accumulate(rows.begin(), rows.end(), 0.0);
  return add(gemms, quantization(c, f, routed, k, n, dbl(rows.size()) * k * n));
}

namespace {
PassTimes linear(const CostBook& c, double tokens, double in, double out) { return linear(c, {}, tokens, in, out); }

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

// Memory-bound kernels: forward moves `bytes`; backward reads the saved input and the incoming
// gradient and writes the outgoing one, about twice the traffic.
PassTimes streaming(const CostBook& c, double bytes, MemoryKernel kind) {
  return {c.memory(bytes, kind), c.memory(2 * bytes, kind)};
}
PassTimes elementwise(const CostBook& c, double bytes) { return streaming(c, bytes, MemoryKernel::elementwise); }

}  // namespace

const LayerWork& LayerWorkCache::get(std::int64_t layer, const std::vector<double>& rank_rows) {
  auto key = std::make_pair(arch_.is_moe_layer(layer), rank_rows);
  auto it = priced_.find(key);
  if (it == priced_.end())
    it = priced_.emplace(std::move(key), layer_work(arch_, plan_, costs_, layer, tokens_, rank_rows)).first;
  return it->second;
}

LayerWork layer_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, std::int64_t layer, double T,
                     const std::vector<double>& rows) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model), q = dbl(a.attn_dim()), kv = dbl(a.kv_dim());
  LayerWork w;
  // Attention block: norm, QKV, (QK-norm), RoPE, flash attention, out-projection, residual.
  const Format attn_f = format_of(plan, LinearClass::attention);
  PassTimes attn = add(linear(c, attn_f, T, d, q + 2 * kv), linear(c, attn_f, T, q, d));
  attn = add(attn, attention(a, c, T));
  const double attn_elem = T * e * (2 * d + 2 * (q + kv) * (a.attention.qk_norm ? 2 : 1) + 3 * d);
  w.pre = add(attn, elementwise(c, attn_elem));
  if (!a.is_moe_layer(layer)) {
    const double h = dbl(a.dense_hidden);
    const Format mlp_f = format_of(plan, LinearClass::dense_mlp);
    w.pre = add(w.pre, add(linear(c, mlp_f, T, d, 2 * h), linear(c, mlp_f, T, h, d)));
    const double mlp_elem = T * e * (2 * d + 3 * h + 3 * d);
    w.pre = add(w.pre, elementwise(c, mlp_elem));
    if (plan.recompute == Recompute::selective)
      w.partial_recompute = c.memory(T * e * 3 * h, MemoryKernel::elementwise);
    if (plan.recompute == Recompute::selective_op) {
      // The even-numbered matmuls (wk, wo, w3; activations.hpp) and the memory-bound kernels run
      // again; the saved flash-attention output spares its forward.
      w.partial_recompute = linear(c, attn_f, T, d, kv).fwd + linear(c, attn_f, T, q, d).fwd +
                            linear(c, mlp_f, T, d, h).fwd + elementwise(c, attn_elem).fwd +
                            elementwise(c, mlp_elem).fwd;
    }
    return w;
  }
  const MoeSpec& m = *a.moe;
  const double K = dbl(m.top_k), N = dbl(m.num_experts), he = dbl(m.expert_hidden), hs = dbl(m.shared_hidden);
  const double routed = std::accumulate(rows.begin(), rows.end(), 0.0);
  w.moe = true;
  // Norm, router GEMM, FP32 softmax/top-K, then the permutation of the K routed copies of each
  // token (read the token, write K rows), unless the EP transport writes each row into its
  // expert's slot itself (ep_transports.hpp); unpermuting after combine likewise.
  const bool permutes = plan.ep == 1 || !ep_transport_model(plan.ep_transport).fuses_permutation();
  const PassTimes permutation = permutes ? streaming(c, T * K * d * e + T * d * e, MemoryKernel::permute) : PassTimes{};
  w.pre = add(w.pre, linear(c, T, d, N));
  w.pre = add(w.pre, elementwise(c, T * (2 * d * e + 2 * N * kFp32)));
  w.pre = add(w.pre, permutation);
  // Up/gate [rows, d] x [d, 2h_e] and down [rows, h_e] x [h_e, d].
  // FP8 dispatch: each token is cast once before the all-to-all (not once per routed copy), and
  // the up/gate GEMM takes the rows as they arrive.
  const Format expert_f = format_of(plan, LinearClass::routed_expert);
  Format up_f = expert_f;
  const GemmPrecision dispatch = plan.precision.ep_dispatch;
  if (dispatch != GemmPrecision::bf16) {
    up_f.input_quantized = true;
    w.pre.fwd += c.memory(T * d * quantize_traffic_per_element(dispatch), MemoryKernel::elementwise);
  }
  w.experts = add(grouped(c, up_f, rows, 2 * he, d), grouped(c, expert_f, rows, d, he));
  w.experts = add(w.experts, elementwise(c, routed * e * 3 * he));
  // Unpermute the K copies back to token order, then the weighted combine and the residual.
  w.post = add(permutation, elementwise(c, 3 * T * d * e));
  for (std::int64_t s = 0; s < m.shared_experts; ++s) {
    const Format shared_f = format_of(plan, LinearClass::shared_expert);
    w.shared = add(w.shared, add(linear(c, shared_f, T, d, 2 * hs), linear(c, shared_f, T, hs, d)));
    w.shared = add(w.shared, elementwise(c, T * e * 3 * hs));
  }
  // Dispatch sends every routed copy (the off-rank share is the collective model's business);
  // a skewed rank's receive side is larger, and the slower side sets its time.
  w.a2a_bytes = std::max(T * K, routed) * d * e;
  w.dispatch_bytes = dispatch == GemmPrecision::bf16
                         ? w.a2a_bytes
                         : std::max(T * K, routed) * d * quantized_bytes_per_element(dispatch);
  if (plan.recompute == Recompute::selective)  // selective_op is refused for MoE blocks (parallel_plan.cpp)
    w.partial_recompute = c.memory(routed * e * 3 * he + T * e * 3 * hs, MemoryKernel::elementwise);
  return w;
}

EdgeWork edge_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, double T) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model), V = dbl(a.vocab_size);
  EdgeWork w;
  // Embedding lookup (a gather of rows); backward scatters the gradient rows into the FP32
  // embedding gradient (read the row gradient, read + write the FP32 row).
  w.embed = {c.memory(2 * T * d * e, MemoryKernel::permute), c.memory(T * d * (e + 2 * kFp32), MemoryKernel::permute)};
  // Final norm, LM head GEMM, cross-entropy over FP32 logits (standard: write the logits in the
  // compute dtype, read them, write FP32 log-probabilities) or fused (one pass over the logits).
  // A tied head multiplies by the embedding, which no cache holds (low_precision.hpp).
  Format head_f = format_of(plan, LinearClass::lm_head);
  head_f.weight_caches = head_f.weight_caches && !a.tie_embeddings;
  w.head = add(linear(c, head_f, T, d, V), elementwise(c, 2 * T * d * e));
  const double ce = plan.loss == LossImpl::standard ? T * V * (e + 2 * kFp32) : T * V * e;
  w.head = add(w.head, {c.memory(ce, MemoryKernel::cross_entropy), c.memory(ce, MemoryKernel::cross_entropy)});
  return w;
}

}  // namespace moesim
