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

// An MLP d -> h -> d: up(/gate) [T, d] x [d, 2h] (gated) or [d, h], down [T, h] x [h, d], and its
// elementwise kernels (the activation, and for a gated one its product, and the residual add).
PassTimes mlp(const Architecture& a, const CostBook& c, Format f, double T, double d, double h, double e) {
  const double up = dbl(a.mlp.up_factor());
  return add(add(linear(c, f, T, d, up * h), linear(c, f, T, h, d)), elementwise(c, T * e * (up + 1) * h));
}

// Builds one layer's list: its token mixer, then its feed-forward part.
struct OpsBuilder {
  OpsBuilder(const Architecture& arch, const ParallelPlan& p, const CostBook& book, std::int64_t layer, double tokens)
      : a(arch), plan(p), c(book), spec(arch.layer(layer)), T(tokens) {}
  const Architecture& a;
  const ParallelPlan& plan;
  const CostBook& c;
  LayerSpec spec;
  double T;
  double e = bytes_of(plan.precision.compute);
  double d = dbl(a.d_model);
  // One rank's widths (rank_layout.hpp): the linears and attention run on the whole microbatch,
  // the norms and residuals on the rank's sequence share under sequence parallelism.
  TpWidths s = tp_widths(a, plan);
  bool tp = plan.tp > 1;
  bool seams = tp && plan.tp_comm_overlap && plan.cp == 1;
  LayerOps out;
  double attn_elem_ = 0;       // the attention's memory-bound bytes (what op-level checkpointing redoes)
  double attn_eager_ = 0;      // and the forward time of its eager RoPE beyond them
  double core_recompute_ = 0;  // selective recompute of the unfused core attention: its forward again
  // Megatron-Core's recompute modules (recompute_modules.hpp): each listed module's forward again
  // before its backward; the mixer's part here, the feed-forward part's in partial_recompute.
  SelectiveRecompute sel = selective_recompute(plan);
  double mixer_recompute_ = 0;
  double norm_fwd(double tokens) const { return elementwise(c, tokens * e * 2 * d).fwd; }  // read and write
  // Hidden dropout's one-byte mask of the rank's `tokens`, written in forward (read in backward)
  // beside the residual add (Megatron-LM's fused bias-dropout-add).
  double dropout_mask(double tokens) const { return a.dropout.hidden > 0 ? tokens * d * kMaskBytes : 0.0; }

  // PyTorch's eager pointwise ops beyond the fused passes (kernels.pointwise "eager", not compiled).
  bool eager = plan.eager_pointwise();
  PassTimes eager_rope(double elements) const {
    return eager && a.position == PositionKind::rope ? eager_rope_extra(c, elements, e) : PassTimes{};
  }
  PassTimes eager_gated(double elements) const {
    return eager && a.mlp.gated() ? eager_gated_activation_extra(c, elements, e) : PassTimes{};
  }

  void push(LayerOpKind kind, PassTimes t, OpPlace place = OpPlace::main) { out.ops.push_back({kind, place, t}); }
  void point(LayerOpKind kind) {
    if (tp) out.ops.push_back({kind, OpPlace::point, {}});
  }
  // With TP communication overlap each collective runs beside the GEMM next to it: a seam (a task
  // boundary) keeps the mixer's core out of that GEMM's task.
  void seam() {
    if (seams) out.ops.push_back({LayerOpKind::tp_seam, OpPlace::point, {}});
  }
  void attention_mixer();
  void mamba_mixer();
  void dense_ffn();
  void moe_ffn(const std::vector<double>& rows);
};

// Attention: norm, QKV (MLA: its down projections, latent norms and up projections), (QK-norm),
// RoPE, flash attention, out-projection, residual.
void OpsBuilder::attention_mixer() {
  const double q = s.q, kv = s.kv, v = s.v;
  const AttentionSpec& at = a.attention;
  const Format attn_f = format_of(plan, LinearClass::attention);
  const double f = s.seq;  // the norms' and residuals' share of the tokens
  double attn_elem = T * e * (2 * d * f + 2 * (q + kv) * (at.qk_norm ? 2 : 1) + 3 * d * f);
  if (at.kind == AttentionKind::mla) attn_elem += T * e * 2 * dbl(at.q_lora_rank + at.kv_lora_rank);
  // Under TP the residual add runs after the region closes, on the rank's sequence share (its
  // 3d of the elementwise bytes), so the op list keeps the data flow the collectives sit in.
  attn_elem += dropout_mask(T * f);
  const double attn_residual = tp ? T * e * 3 * d * f + dropout_mask(T * f) : 0.0;
  // RoPE turns q and k (MLA: their decoupled rope parts, the key's shared by the heads).
  const double roped = at.kind == AttentionKind::mla ? dbl(at.qk_rope_head_dim) * (s.heads + 1) : q + kv;
  const PassTimes rope = eager_rope(T * roped);
  push(LayerOpKind::attention_elementwise, add(elementwise(c, attn_elem - attn_residual), rope));
  point(LayerOpKind::tp_enter);
  if (at.kind == AttentionKind::mla) {
    // The down projections are whole on every TP rank (Megatron-Core MLASelfAttention), the up
    // projections column-parallel: q through q_lora_rank (or directly), k_nope and v of every
    // local head from the kv latent, the shared RoPE key with the latent.
    const double ql = dbl(at.q_lora_rank), kvl = dbl(at.kv_lora_rank);
    const PassTimes q_up = linear(c, attn_f, T, ql > 0 ? ql : d, q);
    const PassTimes kv_up = linear(c, attn_f, T, kvl, s.kv_heads * dbl(at.qk_nope_head_dim + at.v_head_dim));
    PassTimes proj = ql > 0 ? add(linear(c, attn_f, T, d, ql), q_up) : q_up;
    proj = add(add(proj, linear(c, attn_f, T, d, kvl + dbl(at.qk_rope_head_dim))), kv_up);
    push(LayerOpKind::qkv_projection, proj);
    // mla_up_proj: the q and kv up projections and RoPE again; layernorm: the input norm (a module
    // of its own under MLA).
    if (sel.mla_up_proj)
      mixer_recompute_ += q_up.fwd + kv_up.fwd + c.memory(T * roped * 2 * e, MemoryKernel::elementwise) + rope.fwd;
    if (sel.layernorm) mixer_recompute_ += norm_fwd(T * f);
  } else {
    push(LayerOpKind::qkv_projection, linear(c, attn_f, T, d, q + kv + v));
    // A whole-projection QK-norm needs every feature of a token's q and k, which TP splits by
    // head: q and k go to sequence shards for the norm and come back (LayerPoint::qk_norm_exchange).
    // The norm's bytes are the same either way (all tokens x the rank's heads, or a share of the
    // tokens x every head), so its kernel stays in the block's elementwise op.
    if (tp && at.qk_norm && at.qk_norm_scope == QkNormScope::projection) {
      out.qk_norm_bytes = T * (q + kv) * e;
      point(LayerOpKind::qk_norm_exchange);
      point(LayerOpKind::qk_norm_exchange);
    }
  }
  seam();
  // Context parallelism: T is the rank's share of each sequence (2 chunks of S / 2CP, one from
  // each end), so the attention priced on it is 1/CP of the sequence's causal work, the balanced
  // split's share. The ring passes every rank's K and V chunk around the CP - 1 others
  // (Transformer Engine AttnFuncWithCPAndKVP2P); the all-to-all variant sends q, k, v to the
  // ranks of their head shard and the output back (DeepSpeed-Ulysses).
  const bool cp = plan.cp > 1;
  if (cp) {
    out.ops.push_back({LayerOpKind::cp_begin, OpPlace::point, {}});
    out.cp_ring_bytes = T * (kv + v) * e;
    out.cp_qkv_bytes = T * (q + kv + v) * e;
    out.cp_out_bytes = T * s.out * e;
  }
  if (plan.attention_kernel == AttentionKernel::unfused) {
    const PassTimes core = unfused_attention(a, c, T, s.heads, e);
    if (sel.core_attn) core_recompute_ = core.fwd;  // core_attn recomputed in backward
    push(LayerOpKind::attention_core, core);
  } else {
    const PassTimes core = flash_attention(a, c, T, s.heads, s.kv_heads, dbl(spec.window));
    if (sel.core_attn && sel.modules) core_recompute_ = core.fwd;  // a fused kernel's checkpoint: forward again
    push(LayerOpKind::attention_core, core);
  }
  if (cp) out.ops.push_back({LayerOpKind::cp_end, OpPlace::point, {}});
  seam();
  push(LayerOpKind::output_projection, linear(c, attn_f, T, s.out, d));
  point(LayerOpKind::tp_exit);
  if (tp) push(LayerOpKind::residual, elementwise(c, attn_residual));
  attn_elem_ = attn_elem;
  attn_eager_ = rope.fwd;
}

// A Mamba-2 mixer (Megatron-Core MambaMixer, its TP split by heads and B/C groups): norm, in_proj
// to z, x, B, C and dt, the depthwise causal conv1d over x, B and C (read and write), the SSD
// scan, the gated RMSNorm (reads y and z, writes its output), out_proj, residual.
void OpsBuilder::mamba_mixer() {
  const MambaSpec& m = *a.mamba;
  const double N = dbl(m.state_dim), inner = s.mamba_inner, groups = s.mamba_groups, heads = s.mamba_heads;
  const double f = s.seq;
  const double residual = tp ? T * e * 3 * d * f + dropout_mask(T * f) : 0.0;
  push(LayerOpKind::mixer_elementwise,
       elementwise(c, T * e * (2 * d * f + 3 * d * f) + dropout_mask(T * f) - residual));
  point(LayerOpKind::tp_enter);
  const Format mix_f = format_of(plan, LinearClass::attention);
  push(LayerOpKind::mamba_in_projection, linear(c, mix_f, T, d, 2 * inner + 2 * groups * N + heads));
  seam();
  const ScanShape scan{T, heads, dbl(m.head_dim), groups, N, dbl(m.chunk_size), dbl(a.sequence_length)};
  const double conv = T * e * 2 * (inner + 2 * groups * N), gated_norm = T * e * 3 * inner;
  push(LayerOpKind::ssd_scan, add(elementwise(c, conv + gated_norm), {c.scan(scan, false), c.scan(scan, true), 0}));
  seam();
  push(LayerOpKind::mamba_out_projection, linear(c, mix_f, T, inner, d));
  point(LayerOpKind::tp_exit);
  if (tp) push(LayerOpKind::residual, elementwise(c, residual));
}

void OpsBuilder::dense_ffn() {
  const double h = s.dense_hidden, up = dbl(a.mlp.up_factor()), f = s.seq;
  const Format mlp_f = format_of(plan, LinearClass::dense_mlp);
  // The MLP's elementwise kernels: its norm and input (2d), the activation (3h gated, 2h not),
  // the residual (3d).
  const double mlp_elem = T * e * (2 * d * f + (up + 1) * h + 3 * d * f) + dropout_mask(T * f);
  const PassTimes activation = eager_gated(T * h);
  if (!tp) {
    push(
        LayerOpKind::dense_mlp,
        add(add(add(linear(c, mlp_f, T, d, up * h), linear(c, mlp_f, T, h, d)), elementwise(c, mlp_elem)), activation));
  } else {
    // Its norm closes the mixer's residual op; then the TP region: up(/gate) and the activation,
    // the down projection (a seam between them under overlap), and the residual after it.
    const double norm = T * e * 2 * d * f, residual = T * e * 3 * d * f + dropout_mask(T * f);
    if (out.ops.empty()) {
      push(LayerOpKind::residual, elementwise(c, norm));  // an MLP-only layer: its norm alone
    } else {
      out.ops.back().times = add(out.ops.back().times, elementwise(c, norm));
    }
    point(LayerOpKind::tp_enter);
    push(LayerOpKind::dense_mlp,
         add(add(linear(c, mlp_f, T, d, up * h), elementwise(c, T * e * (up + 1) * h)), activation));
    seam();
    push(LayerOpKind::mlp_down, linear(c, mlp_f, T, h, d));
    point(LayerOpKind::tp_exit);
    push(LayerOpKind::residual, elementwise(c, residual));
  }
  if (plan.recompute == Recompute::selective && !sel.modules)
    out.partial_recompute = c.memory(T * e * (up + 1) * h, MemoryKernel::elementwise) + activation.fwd;
  if (sel.mlp)  // the dense MLP's checkpoint: its norm (in fc1), GEMMs and activation again
    out.partial_recompute = linear(c, mlp_f, T, d, up * h).fwd + linear(c, mlp_f, T, h, d).fwd + norm_fwd(T * f) +
                            elementwise(c, T * e * (up + 1) * h).fwd + activation.fwd;
  if (plan.recompute == Recompute::selective_op) {
    // An attention + SwiGLU block (validate_plan refuses the others): the even-numbered matmuls
    // (wk, wo, w3; activations.hpp) and the memory-bound kernels run again; the saved
    // flash-attention output spares its forward.
    const Format attn_f = format_of(plan, LinearClass::attention);
    out.partial_recompute = linear(c, attn_f, T, d, s.kv).fwd + linear(c, attn_f, T, s.q, d).fwd +
                            linear(c, mlp_f, T, d, h).fwd + elementwise(c, attn_elem_).fwd + attn_eager_ +
                            elementwise(c, mlp_elem).fwd + activation.fwd;
  }
}

void OpsBuilder::moe_ffn(const std::vector<double>& rows) {
  // An MoE block under TP runs on the rank's sequence share (sequence parallelism is required
  // there: validate_plan): it routes its own tokens; the routed experts are not tensor-parallel.
  T *= s.seq;
  const std::size_t first_op = out.ops.size();
  const MoeSpec& m = *a.moe;
  const double K = dbl(m.top_k), N = dbl(m.num_experts), he = dbl(m.expert_hidden), hs = dbl(m.shared_hidden);
  const double up = dbl(a.mlp.up_factor());
  const double routed = std::accumulate(rows.begin(), rows.end(), 0.0);
  out.moe = true;
  // Norm, router GEMM, FP32 softmax/top-K, then the permutation of the K routed copies of each
  // token (read the token, write K rows), unless the EP transport writes each row into its
  // expert's slot itself (ep_transports.hpp); unpermuting after combine likewise.
  // Under the all-gather dispatcher the rank permutes its own experts' rows out of the gathered
  // [EP x T, d] tokens (an index_select: read and write each row) and unpermutes them into a zeroed
  // [EP x T, d] tensor (write it, then scatter_add each row: read it, read and write its place),
  // Megatron-Core moe_utils.py permute / unpermute.
  const double received = routed / dbl(plan.etp);  // under expert TP, the rank's 1/ETP before the gather
  const EpTransportModel& transport = ep_transport_model(plan.ep_transport);
  const bool gathers = plan.ep > 1 && transport.gathers_tokens();
  const bool permutes = plan.ep == 1 || !transport.fuses_permutation();
  PassTimes permutation{}, unpermutation{};
  if (gathers) {
    permutation = streaming(c, 2 * received * d * e, MemoryKernel::permute);
    unpermutation = streaming(c, dbl(plan.ep) * T * d * e + 3 * received * d * e, MemoryKernel::permute);
  } else if (permutes) {
    permutation = unpermutation = streaming(c, T * K * d * e + T * d * e, MemoryKernel::permute);
  }
  push(LayerOpKind::router, linear(c, T, d, N));
  push(LayerOpKind::router_elementwise, elementwise(c, T * (2 * d * e + 2 * N * kFp32)));
  push(LayerOpKind::permute, permutation);
  // FP8 dispatch: each token is cast once before the all-to-all (not once per routed copy), and
  // the up/gate GEMM takes the rows as they arrive.
  const Format expert_f = format_of(plan, LinearClass::routed_expert);
  Format up_f = expert_f;
  const GemmPrecision dispatch = plan.precision.ep_dispatch;
  if (dispatch != GemmPrecision::bf16) {
    up_f.input_quantized = true;
    const double cast = c.memory(T * d * quantize_traffic_per_element(dispatch), MemoryKernel::elementwise);
    push(LayerOpKind::dispatch_cast, {cast, 0, 0});
  }
  out.ops.push_back({LayerOpKind::ep_dispatch, OpPlace::point, {}});
  // Up(/gate) [rows, d] x [d, 2h_e] and down [rows, h_e] x [h_e, d], and the activation between
  // them; under expert TP on the rows gathered from the ETP group, through 1/ETP of h_e.
  const double he_r = he / dbl(plan.etp);
  const PassTimes routed_activation = eager_gated(routed * he_r);
  push(LayerOpKind::routed_experts,
       add(add(add(grouped(c, up_f, rows, up * he_r, d), grouped(c, expert_f, rows, d, he_r)),
               elementwise(c, routed * e * (up + 1) * he_r)),
           routed_activation));
  out.ops.push_back({LayerOpKind::ep_combine, OpPlace::point, {}});
  // Unpermute the K copies back to token order, then the weighted combine and the residual.
  push(LayerOpKind::unpermute, unpermutation);
  push(LayerOpKind::combine_elementwise, elementwise(c, 3 * T * d * e + dropout_mask(T)));
  // A shared expert under TP is a TP MLP of its own (Megatron-Core SharedExpertMLP): the whole
  // microbatch through 1/TP of its hidden width, between its own all-gather and reduce-scatter.
  const Format shared_f = format_of(plan, LinearClass::shared_expert);
  const PassTimes shared_activation = eager_gated(T * s.t * s.shared_hidden);
  for (std::int64_t x = 0; x < m.shared_experts; ++x)
    push(LayerOpKind::shared_expert, add(mlp(a, c, shared_f, T * s.t, d, s.shared_hidden, e), shared_activation),
         OpPlace::side);
  // Dispatch sends every routed copy (the off-rank share is the collective model's business);
  // a skewed rank's receive side is larger, and the slower side sets its time. The all-gather
  // dispatcher moves the rank's tokens once, whatever the routing (FP8 dispatch is refused there).
  const double sent_rows = gathers ? T : std::max(T * K, received);
  out.a2a_bytes = sent_rows * d * e;
  out.dispatch_bytes =
      dispatch == GemmPrecision::bf16 ? out.a2a_bytes : sent_rows * d * quantized_bytes_per_element(dispatch);
  if (plan.etp > 1) out.etp_bytes = routed * d * e;
  if (plan.recompute == Recompute::selective && !sel.modules)  // selective_op is refused for MoE blocks
    out.partial_recompute = c.memory(routed * e * (up + 1) * he_r + T * e * (up + 1) * hs, MemoryKernel::elementwise) +
                            routed_activation.fwd + dbl(m.shared_experts) * shared_activation.fwd;
  if (!sel.modules) return;
  // moe: the layer's ops again (refused with EP > 1: its all-to-alls would run again); else
  // moe_act the routed activation, shared_experts the shared MLPs; layernorm the pre-MLP norm.
  double redo = sel.layernorm ? norm_fwd(T) : 0.0;
  if (sel.moe) {
    for (std::size_t i = first_op; i < out.ops.size(); ++i) redo += out.ops[i].times.fwd;
  } else {
    if (sel.routed_act)
      redo += c.memory(routed * e * (up + 1) * he_r, MemoryKernel::elementwise) + routed_activation.fwd;
    if (sel.shared_experts) {
      for (std::size_t i = first_op; i < out.ops.size(); ++i)
        if (out.ops[i].kind == LayerOpKind::shared_expert) redo += out.ops[i].times.fwd;
    }
  }
  out.partial_recompute = redo;
}

}  // namespace

LayerOps layer_ops(const Architecture& a, const ParallelPlan& plan, const CostBook& c, std::int64_t layer, double T,
                   const std::vector<double>& rows) {
  OpsBuilder b(a, plan, c, layer, T);
  if (b.tp) b.out.tp_bytes = T * b.d * b.e;
  if (b.spec.mixer == Mixer::attention) b.attention_mixer();
  if (b.spec.mixer == Mixer::mamba) b.mamba_mixer();
  if (b.spec.ffn == Ffn::dense) b.dense_ffn();
  if (b.spec.ffn == Ffn::moe) b.moe_ffn(rows);
  b.out.partial_recompute += b.core_recompute_ + b.mixer_recompute_;
  return std::move(b.out);
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
    case LayerOpKind::qk_norm_exchange: return LayerPoint::qk_norm_exchange;
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
  w.qk_norm_bytes = l.qk_norm_bytes;
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
