#include "models/costs/layer_work.hpp"

#include <algorithm>
#include <numeric>

#include "models/common/units.hpp"
#include "models/costs/layer_ops.hpp"
#include "models/costs/loss_paths.hpp"
#include "models/costs/low_precision.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

constexpr double kFp32 = bytes_of(DType::fp32);

PassTimes elementwise(const CostBook& c, double bytes) { return streaming(c, bytes, MemoryKernel::elementwise); }

PassTimes scaled(PassTimes t, double k) { return {t.fwd * k, t.bwd * k, t.wgrad * k}; }

// The compute of a block as one stream would run it: the parts before the dispatch, the routed
// experts beside the shared ones, the parts after the combine.
PassTimes block_compute(const LayerWork& w) {
  const PassTimes beside{std::max(w.experts.fwd, w.shared.fwd), std::max(w.experts.bwd, w.shared.bwd),
                         std::max(w.experts.wgrad, w.shared.wgrad)};
  return add(add(w.pre, beside), w.post);
}

}  // namespace

// One multi-token prediction module (DeepSeek-V3 Section 2.2; Megatron-Core
// MultiTokenPredictionLayer), after the main model on the last stage: the next tokens' embedding
// lookup, the norms of the hidden state and of that embedding and their concatenation (read 2 x d,
// write 2 x d, then 2d again), the [2d] -> [d] projection, a block like the last layer (its routed
// experts on evenly routed rows, its EP dispatch and combine exposed; expert TP's gathers are not
// priced), and the shared head with its loss once more (`edge`: the main head, already priced).
PassTimes mtp_module(const Architecture& a, const ParallelPlan& plan, const CostBook& c, double T,
                     const EdgeWork& edge) {
  const double e = bytes_of(plan.precision.compute), d = dbl(a.d_model);
  std::vector<double> rows;
  if (a.is_moe_layer(a.num_layers - 1)) {
    const MoeSpec& m = *a.moe;
    const double per_expert = T * plan.sequence_share() * dbl(plan.ep * plan.etp * m.top_k) / dbl(m.num_experts);
    rows.assign(static_cast<std::size_t>(m.num_experts / plan.ep), per_expert);
  }
  PassTimes t = add(edge.embed, elementwise(c, T * e * 6 * d));
  t = add(t, linear(c, format_of(plan, LinearClass::attention), T, 2 * d, d));
  const LayerWork block = layer_work(a, plan, c, a.num_layers - 1, T, rows);
  t = add(t, block_compute(block));
  if (block.moe && plan.ep > 1) {
    // Its dispatch and combine, exposed as in the step-time bound: both forward, and both their
    // gradients backward.
    const auto transfer = [&](double bytes, bool toward_experts) {
      return c.ep_transfer(plan.ep_transport, ep_transfer_request(a, plan, bytes, toward_experts)).time_s;
    };
    t.fwd += transfer(block.dispatch_bytes, true) + transfer(block.a2a_bytes, false);
    t.bwd += transfer(block.a2a_bytes, true) + transfer(block.a2a_bytes, false);
  }
  return add(t, edge.head);
}

PassTimes add(PassTimes a, PassTimes b) { return {a.fwd + b.fwd, a.bwd + b.bwd, a.wgrad + b.wgrad}; }

TpCollective tp_collective(LayerPoint point, bool backward, bool sequence_parallel) {
  // Megatron-LM tensor_parallel/mappings.py: without SP, copy_to (f: identity, all-reduce in
  // backward) and reduce_from (g: all-reduce, identity in backward); with SP,
  // gather_from_sequence_parallel_region (all-gather, reduce-scatter in backward) and
  // reduce_scatter_to_sequence_parallel_region (reduce-scatter, all-gather in backward).
  // Olmo-core's whole-projection QK-norm under TP (nn/attention Attention.apply_tp): w_q and w_k
  // hand their outputs over as Shard(1) (the sequence), the norm runs sequence-parallel, and its
  // output goes back to Shard(2) (the heads): DTensor redistributes between two shard dimensions
  // by an all-to-all, both ways in forward and their adjoints in backward.
  if (point == LayerPoint::qk_norm_exchange) return {true, CollectiveKind::all_to_all};
  const bool opens = point == LayerPoint::tp_enter;
  if (sequence_parallel) {
    return {true, opens != backward ? CollectiveKind::all_gather : CollectiveKind::reduce_scatter};
  }
  return {opens == backward, CollectiveKind::all_reduce};
}

Format format_of(const ParallelPlan& plan, LinearClass c) {
  return {plan.precision.linear(c), plan.precision.weight_caches, false};
}

PassTimes streaming(const CostBook& c, double bytes, MemoryKernel kind) {
  return {c.memory(bytes, kind), c.memory(2 * bytes, kind)};
}

PassTimes flash_attention(const Architecture& a, const CostBook& c, double tokens, double heads, double kv_heads,
                          double window) {
  AttentionShape shape;
  shape.sequences = tokens / dbl(a.sequence_length);
  shape.seq_len = dbl(a.sequence_length);
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = dbl(a.attention.qk_head_dim());
  shape.v_head_dim = dbl(a.attention.value_head_dim());
  shape.window = window;
  shape.causal = true;
  return {c.attention(shape, false), c.attention(shape, true)};
}

PassTimes unfused_attention(const Architecture& a, const CostBook& c, double tokens, double heads, double e) {
  const double S = dbl(a.sequence_length), count = tokens / S * heads;
  const double dq = dbl(a.attention.qk_head_dim()), dv = dbl(a.attention.value_head_dim());
  const double scores = count * S * S;
  const bool drops = a.dropout.attention > 0;
  constexpr GemmPrecision bf16 = GemmPrecision::bf16;
  const double gemms_fwd = c.gemm({S, S, dq, GemmPass::forward, bf16}) + c.gemm({S, dv, S, GemmPass::forward, bf16});
  // dP = dO V^T, dV = P^T dO, dS -> dQ = dS K, dK = dS^T Q.
  const double gemms_bwd = c.gemm({S, S, dv, GemmPass::dgrad, bf16}) + c.gemm({S, dv, S, GemmPass::wgrad, bf16}) +
                           c.gemm({S, dq, S, GemmPass::dgrad, bf16}) + c.gemm({S, dq, S, GemmPass::wgrad, bf16});
  const double softmax_fwd = scores * 2 * e, dropout_fwd = drops ? scores * (2 * e + kMaskBytes) : 0.0;
  const double softmax_bwd = scores * 3 * e, dropout_bwd = drops ? scores * (2 * e + kMaskBytes) : 0.0;
  return {count * gemms_fwd + c.memory(softmax_fwd + dropout_fwd, MemoryKernel::elementwise),
          count * gemms_bwd + c.memory(softmax_bwd + dropout_bwd, MemoryKernel::elementwise), 0.0};
}

PassTimes eager_rope_extra(const CostBook& c, double elements, double e) {
  constexpr double fp32 = bytes_of(DType::fp32);
  return {c.memory(elements * 4 * fp32, MemoryKernel::elementwise),
          c.memory(elements * (4 * fp32 - 2 * e), MemoryKernel::elementwise), 0.0};
}

PassTimes eager_gated_activation_extra(const CostBook& c, double elements, double e) {
  return {c.memory(2 * e * elements, MemoryKernel::elementwise), c.memory(3 * e * elements, MemoryKernel::elementwise),
          0.0};
}

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

const LayerWork& LayerWorkCache::get(std::int64_t layer, const std::vector<double>& rank_rows) {
  auto key = std::make_pair(arch_.layer(layer), rank_rows);
  auto it = priced_.find(key);
  if (it == priced_.end())
    it = priced_.emplace(std::move(key), layer_work(arch_, plan_, costs_, layer, tokens_, rank_rows)).first;
  return it->second;
}

LayerWork layer_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, std::int64_t layer, double T,
                     const std::vector<double>& rows) {
  return segments(layer_ops(a, plan, c, layer, T, rows));
}

EdgeWork edge_work(const Architecture& a, const ParallelPlan& plan, const CostBook& c, double T) {
  const double e = bytes_of(plan.precision.compute);
  // Under TP the embedding and the head are vocab-parallel (1/TP of the vocabulary on each rank,
  // every token looked up or projected: Megatron-LM VocabParallelEmbedding, the output layer and
  // vocab_parallel_cross_entropy); the final norm runs on the rank's sequence share.
  const double d = dbl(a.d_model), V = tp_widths(a, plan).vocab;
  const double outside = T * plan.sequence_share();
  EdgeWork w;
  // Embedding lookup (a gather of rows); backward scatters the gradient rows into the FP32
  // embedding gradient (read the row gradient, read + write the FP32 row).
  w.embed = {c.memory(2 * T * d * e, MemoryKernel::permute), c.memory(T * d * (e + 2 * kFp32), MemoryKernel::permute)};
  // Final norm, LM head GEMM, and the loss path's cross-entropy kernels over the logits
  // (loss_paths.hpp); a path that recomputes the logits in backward runs the head GEMM again.
  // A tied head multiplies by the embedding, which no cache holds (low_precision.hpp).
  Format head_f = format_of(plan, LinearClass::lm_head);
  head_f.weight_caches = head_f.weight_caches && !a.tie_embeddings;
  const PassTimes head = linear(c, head_f, T, d, V);
  w.head = add(head, elementwise(c, 2 * outside * d * e));
  const LossPath& loss = loss_path(plan.loss);
  w.head.bwd += loss.recomputed_head_gemms() * head.fwd;
  const auto kernels = [&](double bytes) { return bytes > 0 ? c.memory(bytes, MemoryKernel::cross_entropy) : 0.0; };
  w.head = add(w.head,
               {kernels(T * V * loss.forward_bytes_per_logit(e)), kernels(T * V * loss.backward_bytes_per_logit(e))});
  if (a.mtp_layers > 0) w.head = add(w.head, scaled(mtp_module(a, plan, c, T, w), dbl(a.mtp_layers)));
  return w;
}

}  // namespace moesim
