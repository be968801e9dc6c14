#include "models/costs/layer_ops.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "models/common/units.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/low_precision.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {

constexpr double kFp32 = bytes_of(DType::fp32);

PassTimes linear(const CostBook& c, double tokens, double in, double out) { return linear(c, {}, tokens, in, out); }
PassTimes elementwise(const CostBook& c, double bytes) { return streaming(c, bytes, MemoryKernel::elementwise); }

// Causal flash attention over the microbatch's sequences (GQA: K/V heads from the architecture),
// on this rank's `heads` and `kv_heads` (all of them, or a TP shard).
PassTimes attention(const Architecture& a, const CostBook& c, double tokens, double heads, double kv_heads) {
  AttentionShape shape;
  shape.sequences = tokens / dbl(a.sequence_length);
  shape.seq_len = dbl(a.sequence_length);
  shape.heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = dbl(a.attention.head_dim);
  shape.causal = true;
  return {c.attention(shape, false), c.attention(shape, true)};
}

// A SwiGLU MLP d -> h -> d: up/gate [T, d] x [d, 2h], down [T, h] x [h, d], and its elementwise
// kernels (the activation's product and the residual add).
PassTimes swiglu_mlp(const CostBook& c, Format f, double T, double d, double h, double e) {
  return add(add(linear(c, f, T, d, 2 * h), linear(c, f, T, h, d)), elementwise(c, T * e * 3 * h));
}

}  // namespace

LayerOps layer_ops(const Architecture& a, const ParallelPlan& plan, const CostBook& c, std::int64_t layer, double T,
                   const std::vector<double>& rows) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model);
  // One rank's widths (rank_layout.hpp): the linears and attention run on the whole microbatch,
  // the norms and residuals on the rank's sequence share under sequence parallelism.
  const TpWidths s = tp_widths(a, plan);
  const bool tp = plan.tp > 1;
  const double q = s.q, kv = s.kv;
  LayerOps out;
  auto& ops = out.ops;
  const auto point = [&](LayerOpKind kind) {
    if (tp) ops.push_back({kind, OpPlace::point, {}});
  };
  if (tp) out.tp_bytes = T * d * e;
  // Attention: norm, QKV, (QK-norm), RoPE, flash attention, out-projection, residual.
  const Format attn_f = format_of(plan, LinearClass::attention);
  const double f = s.seq;  // the norms' and residuals' share of the tokens
  const double attn_elem = T * e * (2 * d * f + 2 * (q + kv) * (a.attention.qk_norm ? 2 : 1) + 3 * d * f);
  // Under TP the residual add runs after the region closes, on the rank's sequence share (its
  // 3d of the elementwise bytes), so the op list keeps the data flow the collectives sit in.
  const double attn_residual = tp ? T * e * 3 * d * f : 0.0;
  ops.push_back({LayerOpKind::attention_elementwise, OpPlace::main, elementwise(c, attn_elem - attn_residual)});
  point(LayerOpKind::tp_enter);
  ops.push_back({LayerOpKind::qkv_projection, OpPlace::main, linear(c, attn_f, T, d, q + 2 * kv)});
  // With TP communication overlap each collective runs beside the GEMM next to it: a seam (a task
  // boundary) keeps the attention core out of that GEMM's task.
  const bool seams = tp && plan.tp_comm_overlap && plan.cp == 1;
  if (seams) ops.push_back({LayerOpKind::tp_seam, OpPlace::point, {}});
  // Context parallelism: T is the rank's share of each sequence (2 chunks of S / 2CP, one from
  // each end), so the attention priced on it is 1/CP of the sequence's causal work, the balanced
  // split's share. The ring passes every rank's K and V chunk around the CP - 1 others
  // (Transformer Engine AttnFuncWithCPAndKVP2P); the all-to-all variant sends q, k, v to the
  // ranks of their head shard and the output back (DeepSpeed-Ulysses).
  const bool cp = plan.cp > 1;
  if (cp) {
    ops.push_back({LayerOpKind::cp_begin, OpPlace::point, {}});
    out.cp_ring_bytes = T * 2 * kv * e;
    out.cp_qkv_bytes = T * (q + 2 * kv) * e;
    out.cp_out_bytes = T * q * e;
  }
  ops.push_back({LayerOpKind::attention_core, OpPlace::main, attention(a, c, T, s.heads, s.kv_heads)});
  if (cp) ops.push_back({LayerOpKind::cp_end, OpPlace::point, {}});
  if (seams) ops.push_back({LayerOpKind::tp_seam, OpPlace::point, {}});
  ops.push_back({LayerOpKind::output_projection, OpPlace::main, linear(c, attn_f, T, q, d)});
  point(LayerOpKind::tp_exit);
  if (tp) ops.push_back({LayerOpKind::residual, OpPlace::main, elementwise(c, attn_residual)});
  if (!a.is_moe_layer(layer)) {
    const double h = s.dense_hidden;
    const Format mlp_f = format_of(plan, LinearClass::dense_mlp);
    // The MLP's elementwise kernels: its norm and input (2d), the SwiGLU (3h), the residual (3d).
    const double mlp_elem = T * e * (2 * d * f + 3 * h + 3 * d * f);
    if (!tp) {
      ops.push_back({LayerOpKind::dense_mlp, OpPlace::main,
                     add(add(linear(c, mlp_f, T, d, 2 * h), linear(c, mlp_f, T, h, d)), elementwise(c, mlp_elem))});
    } else {
      // Its norm closes the attention's residual op; then the TP region: up/gate and the SwiGLU,
      // the down projection (a seam between them under overlap), and the residual after it.
      const double norm = T * e * 2 * d * f, residual = T * e * 3 * d * f;
      ops.back().times = add(ops.back().times, elementwise(c, norm));
      point(LayerOpKind::tp_enter);
      ops.push_back(
          {LayerOpKind::dense_mlp, OpPlace::main, add(linear(c, mlp_f, T, d, 2 * h), elementwise(c, T * e * 3 * h))});
      if (seams) ops.push_back({LayerOpKind::tp_seam, OpPlace::point, {}});
      ops.push_back({LayerOpKind::mlp_down, OpPlace::main, linear(c, mlp_f, T, h, d)});
      point(LayerOpKind::tp_exit);
      ops.push_back({LayerOpKind::residual, OpPlace::main, elementwise(c, residual)});
    }
    if (plan.recompute == Recompute::selective)
      out.partial_recompute = c.memory(T * e * 3 * h, MemoryKernel::elementwise);
    if (plan.recompute == Recompute::selective_op) {
      // The even-numbered matmuls (wk, wo, w3; activations.hpp) and the memory-bound kernels run
      // again; the saved flash-attention output spares its forward.
      out.partial_recompute = linear(c, attn_f, T, d, kv).fwd + linear(c, attn_f, T, q, d).fwd +
                              linear(c, mlp_f, T, d, h).fwd + elementwise(c, attn_elem).fwd +
                              elementwise(c, mlp_elem).fwd;
    }
    return out;
  }
  // An MoE block under TP runs on the rank's sequence share (sequence parallelism is required
  // there: validate_plan): it routes its own tokens; the routed experts are not tensor-parallel.
  T *= s.seq;
  const MoeSpec& m = *a.moe;
  const double K = dbl(m.top_k), N = dbl(m.num_experts), he = dbl(m.expert_hidden), hs = dbl(m.shared_hidden);
  const double routed = std::accumulate(rows.begin(), rows.end(), 0.0);
  out.moe = true;
  // Norm, router GEMM, FP32 softmax/top-K, then the permutation of the K routed copies of each
  // token (read the token, write K rows), unless the EP transport writes each row into its
  // expert's slot itself (ep_transports.hpp); unpermuting after combine likewise.
  const bool permutes = plan.ep == 1 || !ep_transport_model(plan.ep_transport).fuses_permutation();
  const PassTimes permutation = permutes ? streaming(c, T * K * d * e + T * d * e, MemoryKernel::permute) : PassTimes{};
  ops.push_back({LayerOpKind::router, OpPlace::main, linear(c, T, d, N)});
  ops.push_back({LayerOpKind::router_elementwise, OpPlace::main, elementwise(c, T * (2 * d * e + 2 * N * kFp32))});
  ops.push_back({LayerOpKind::permute, OpPlace::main, permutation});
  // FP8 dispatch: each token is cast once before the all-to-all (not once per routed copy), and
  // the up/gate GEMM takes the rows as they arrive.
  const Format expert_f = format_of(plan, LinearClass::routed_expert);
  Format up_f = expert_f;
  const GemmPrecision dispatch = plan.precision.ep_dispatch;
  if (dispatch != GemmPrecision::bf16) {
    up_f.input_quantized = true;
    const double cast = c.memory(T * d * quantize_traffic_per_element(dispatch), MemoryKernel::elementwise);
    ops.push_back({LayerOpKind::dispatch_cast, OpPlace::main, {cast, 0, 0}});
  }
  ops.push_back({LayerOpKind::ep_dispatch, OpPlace::point, {}});
  // Up/gate [rows, d] x [d, 2h_e] and down [rows, h_e] x [h_e, d], and the SwiGLU between them;
  // under expert TP on the rows gathered from the ETP group, through 1/ETP of h_e.
  const double he_r = he / dbl(plan.etp);
  ops.push_back({LayerOpKind::routed_experts, OpPlace::main,
                 add(add(grouped(c, up_f, rows, 2 * he_r, d), grouped(c, expert_f, rows, d, he_r)),
                     elementwise(c, routed * e * 3 * he_r))});
  ops.push_back({LayerOpKind::ep_combine, OpPlace::point, {}});
  // Unpermute the K copies back to token order, then the weighted combine and the residual.
  ops.push_back({LayerOpKind::unpermute, OpPlace::main, permutation});
  ops.push_back({LayerOpKind::combine_elementwise, OpPlace::main, elementwise(c, 3 * T * d * e)});
  // A shared expert under TP is a TP MLP of its own (Megatron-Core SharedExpertMLP): the whole
  // microbatch through 1/TP of its hidden width, between its own all-gather and reduce-scatter.
  const Format shared_f = format_of(plan, LinearClass::shared_expert);
  for (std::int64_t x = 0; x < m.shared_experts; ++x) {
    ops.push_back({LayerOpKind::shared_expert, OpPlace::side, swiglu_mlp(c, shared_f, T * s.t, d, s.shared_hidden, e)});
  }
  // Dispatch sends every routed copy (the off-rank share is the collective model's business);
  // a skewed rank's receive side is larger, and the slower side sets its time.
  // Under expert TP a rank receives its 1/ETP of the rows it computes on, before the gather.
  const double received = routed / dbl(plan.etp);
  out.a2a_bytes = std::max(T * K, received) * d * e;
  out.dispatch_bytes = dispatch == GemmPrecision::bf16
                           ? out.a2a_bytes
                           : std::max(T * K, received) * d * quantized_bytes_per_element(dispatch);
  if (plan.etp > 1) out.etp_bytes = routed * d * e;
  if (plan.recompute == Recompute::selective)  // selective_op is refused for MoE blocks (parallel_plan.cpp)
    out.partial_recompute = c.memory(routed * e * 3 * he_r + T * e * 3 * hs, MemoryKernel::elementwise);
  return out;
}

namespace {

// The point a point op is between the parts before the dispatch (none for the EP points).
std::optional<LayerPoint> layer_point_of(LayerOpKind kind) {
  switch (kind) {
    case LayerOpKind::tp_enter: return LayerPoint::tp_enter;
    case LayerOpKind::tp_exit: return LayerPoint::tp_exit;
    case LayerOpKind::cp_begin: return LayerPoint::cp_begin;
    case LayerOpKind::cp_end: return LayerPoint::cp_end;
    case LayerOpKind::tp_seam: return LayerPoint::seam;
    default: return std::nullopt;
  }
}

}  // namespace

LayerWork segments(const LayerOps& l) {
  LayerWork w;
  w.moe = l.moe;
  w.a2a_bytes = l.a2a_bytes;
  w.dispatch_bytes = l.dispatch_bytes;
  w.partial_recompute = l.partial_recompute;
  w.tp_bytes = l.tp_bytes;
  w.shared_tp = l.tp_bytes > 0;
  w.cp_ring_bytes = l.cp_ring_bytes;
  w.etp_bytes = l.etp_bytes;
  w.cp_qkv_bytes = l.cp_qkv_bytes;
  w.cp_out_bytes = l.cp_out_bytes;
  w.pre_parts.emplace_back();
  w.pre_first.push_back(static_cast<std::uint8_t>(LayerOpKind::attention_elementwise));
  bool named = false;
  PassTimes* main = &w.pre_parts.back();
  bool before_dispatch = true;
  for (const LayerOp& op : l.ops) {
    if (op.place == OpPlace::point) {
      if (const auto point = layer_point_of(op.kind)) {
        w.pre_points.push_back(*point);
        w.pre_parts.emplace_back();
        w.pre_first.push_back(static_cast<std::uint8_t>(op.kind));  // until an op names it
        named = false;
        main = &w.pre_parts.back();
        continue;
      }
      before_dispatch = false;
      main = op.kind == LayerOpKind::ep_dispatch ? &w.experts : &w.post;
      continue;
    }
    PassTimes& into = op.place == OpPlace::side ? w.shared : *main;
    if (before_dispatch && op.place == OpPlace::main && !named) {
      w.pre_first.back() = static_cast<std::uint8_t>(op.kind);
      named = true;
    }
    into = add(into, op.times);
    if (op.kind == LayerOpKind::attention_core) w.attention = op.times;
    if (op.place == OpPlace::main && before_dispatch) w.pre = add(w.pre, op.times);
  }
  return w;
}

}  // namespace moesim
