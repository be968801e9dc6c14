#include "models/memory/activations.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include "models/common/units.hpp"
#include "models/costs/low_precision.hpp"
#include "models/memory/op_checkpointing.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {
constexpr double kFp32 = 4.0;   // router logits and the attention log-sum-exp are FP32
constexpr double kIndex = 8.0;  // int64 expert indices
}  // namespace

std::string_view name_of(SavedFormat format, DType compute) {
  switch (format) {
    case SavedFormat::compute: return name_of(compute);
    case SavedFormat::fp32: return "fp32";
    case SavedFormat::int64: return "int64";
    case SavedFormat::fp8: return "fp8";
    case SavedFormat::mxfp8: return "mxfp8";
    case SavedFormat::mask: return "bool";
  }
  return "?";
}

namespace {

// Under tensor parallelism (Korthikanti et al. 2022 Section 4) what TP splits is saved split
// (one rank's widths, tp_widths), and with sequence parallelism what lies between the TP regions
// is saved as the rank's sequence share (`seq` per token of the microbatch); an MoE block runs on
// the sequence share (SP is required there).

// Bytes per token as a block saves them, each term in its format and part (attention or MLP).
class SavedTerms {
 public:
  // `tokens`: the microbatch's, which sizes each saved tensor against the offload threshold.
  SavedTerms(const ParallelPlan& plan, double tokens)
      : plan_(plan), e_(bytes_of(plan.precision.compute)), tokens_(tokens) {}

  // The offload module (plan.activations.offload_modules) whose group the following terms are
  // saved in, or none.
  void in(std::optional<OffloadModule> module) { module_ = module; }

  // True when the compiled block's partitioner, not the linear, decides what of the linear's
  // input is saved: the block is compiled and the linear keeps its BF16 input (a Transformer
  // Engine FP8 linear keeps its own quantized copy, outside any compiled graph). The router
  // (no class: it stays BF16) always keeps its BF16 input.
  bool recomputable(std::optional<LinearClass> c) const {
    return plan_.compiled_blocks && (!c || plan_.precision.linear(*c) == GemmPrecision::bf16 ||
                                     plan_.precision.library != LowPrecisionLibrary::transformer_engine);
  }
  // A norm's output that feeds a linear of class `c` (none: the router), `rows` tokens of
  // `width`: saved as the linear keeps it, or, under a compiled block, recomputed from the norm's
  // saved input and its FP32 rstd (one per token), which is what is kept.
  void norm_output(double BlockActivations::*part, std::optional<LinearClass> c, double rows, double width) {
    if (recomputable(c)) {
      add(part, SavedFormat::fp32, kFp32 * rows);
    } else if (c) {
      linear_input(part, *c, rows * width);
    } else {
      activations(part, rows * width);
    }
  }
  // A SwiGLU product (the down projection's input): recomputed from the saved up/gate outputs by
  // a compiled block, as selective recompute does.
  void swiglu_product(double BlockActivations::*part, LinearClass c, double elements) {
    if (!recomputable(c)) linear_input(part, c, elements);
  }

  void add(double BlockActivations::*part, SavedFormat format, double bytes) {
    out_.*part += bytes;
    out_.by_format[static_cast<std::size_t>(format)] += bytes;
    if (module_) offload(part, format, bytes, *module_);
  }
  // Records `bytes` per token of one saved tensor as offloaded when the plan lists `module` and
  // the tensor reaches Megatron-Core's minimum size.
  void offload(double BlockActivations::*part, SavedFormat format, double bytes, OffloadModule module) {
    if (!plan_.offload_modules.has(module) || bytes / element_bytes(format) * tokens_ < kMinOffloadedElements) return;
    offloaded_.*part += bytes;
    offloaded_.by_format[static_cast<std::size_t>(format)] += bytes;
  }
  double element_bytes(SavedFormat format) const {
    switch (format) {
      case SavedFormat::compute: return e_;
      case SavedFormat::fp32: return kFp32;
      case SavedFormat::int64: return kIndex;
      case SavedFormat::fp8: return quantized_bytes_per_element(GemmPrecision::fp8);
      case SavedFormat::mxfp8: return quantized_bytes_per_element(GemmPrecision::mxfp8);
      case SavedFormat::mask: return kMaskBytes;
    }
    return e_;
  }
  // `elements` of compute-dtype activations.
  void activations(double BlockActivations::*part, double elements) { add(part, SavedFormat::compute, e_ * elements); }
  // The input of a linear of class `c` (`elements` of it), as that linear keeps it for its weight
  // gradient: its own BF16 input, unless Transformer Engine runs it in FP8 / MXFP8, which keeps
  // only the quantized column-wise copy the wgrad GEMM reads (1 byte, + 1/32 for MXFP8's E8M0
  // scales; the scale rows' padding to 4 x 128 is left out).
  void linear_input(double BlockActivations::*part, LinearClass c, double elements) {
    const GemmPrecision p = plan_.precision.linear(c);
    if (p == GemmPrecision::bf16 || plan_.precision.library != LowPrecisionLibrary::transformer_engine) {
      activations(part, elements);
      return;
    }
    add(part, format_of(p), quantized_bytes_per_element(p) * elements);
  }
  // A Transformer Engine linear's own quantized copy of an input that stays saved in BF16 for
  // another op (a shared expert reads the norm output the router keeps); nothing otherwise.
  void extra_quantized_copy(double BlockActivations::*part, LinearClass c, double elements) {
    const GemmPrecision p = plan_.precision.linear(c);
    if (p == GemmPrecision::bf16 || plan_.precision.library != LowPrecisionLibrary::transformer_engine) return;
    add(part, format_of(p), quantized_bytes_per_element(p) * elements);
  }
  static SavedFormat format_of(GemmPrecision p) {
    return p == GemmPrecision::mxfp8 ? SavedFormat::mxfp8 : SavedFormat::fp8;
  }
  BlockActivations result() const { return out_; }
  BlockActivations offloaded() const { return offloaded_; }
  double e() const { return e_; }

 private:
  const ParallelPlan& plan_;
  double e_, tokens_;
  std::optional<OffloadModule> module_;
  BlockActivations out_, offloaded_;
};

// Attention: the norm input; its output, the QKV GEMM's input (Transformer Engine's
// LayerNormLinear keeps only its quantized copy); q/k before QK-norm; q/k/v after RoPE (the
// flash-attention inputs); the attention output, which flash attention saves and the
// out-projection shares (Megatron-Core's attention.py set_save_original_input(linear_proj) for
// every FP8 recipe but delayed scaling); the FP32 log-sum-exp. Under SP the QKV input is kept
// as the rank's sequence shard and gathered again in backward (Megatron-LM
// LinearWithGradAccumulationAndAsyncCommunication saves the input before its all-gather).
// MLA (Megatron-Core MLASelfAttention, non-absorbed for training) also keeps its latents, whole on
// every TP rank: the q latent before and after its norm (the up projection's input), the kv
// latent with the RoPE key and the normed kv latent.
// The unfused core attention (plan.kernels.attention "unfused", Megatron-LM's DotProductAttention)
// keeps no log-sum-exp but each local head's softmax probabilities over the S keys, and where
// attention dropout drops, its mask and output (Korthikanti et al. 2022 Section 4.1: 5as^2b per
// layer), unless selective recompute recomputes the core attention (Megatron-LM's default
// selective module, core_attn). Hidden dropout keeps a mask of the attention's output.
// Megatron-Core's selective modules (recompute_modules.hpp) discard what they rebuild: layernorm
// MLA's input-norm output (a module of its own there; a GQA block's norm is fused into the QKV
// LayerNormLinear), mla_up_proj q, k and v (the latents stay), core_attn the probabilities of the
// unfused core attention (a fused kernel's q, k, v and output stay, the checkpoint's inputs and
// the out-projection's).
void attention_terms(const Architecture& a, const ParallelPlan& plan, const TpWidths& w, SavedTerms& t) {
  constexpr auto attention = &BlockActivations::attention;
  const double d = dbl(a.d_model);
  const SelectiveRecompute sel = selective_recompute(plan);
  const bool mla = a.attention.kind == AttentionKind::mla;
  // The block input: the input norm's (a module of its own in MLA), else kept by the QKV
  // projection's fused LayerNormLinear; the norm output is that projection's input.
  t.in(mla ? OffloadModule::attn_norm : OffloadModule::qkv_linear);
  t.activations(attention, d * w.seq);
  t.in(OffloadModule::qkv_linear);
  if (!(sel.layernorm && mla)) t.norm_output(attention, LinearClass::attention, w.seq, d);
  t.in(std::nullopt);
  if (mla) {
    const AttentionSpec& at = a.attention;
    t.activations(attention,
                  2 * dbl(at.q_lora_rank) + dbl(at.kv_lora_rank + at.qk_rope_head_dim) + dbl(at.kv_lora_rank));
  }
  if (a.attention.qk_norm) t.activations(attention, w.q + w.kv);
  const double qkv = sel.mla_up_proj && mla ? 0.0 : w.q + w.kv + w.v;
  t.activations(attention, qkv + w.out);
  // The core attention's inputs, and its output (the out-projection's input, offloaded with it).
  if (qkv > 0) {
    for (const double width : {w.q, w.kv, w.v})
      t.offload(attention, SavedFormat::compute, t.e() * width, OffloadModule::core_attn);
  }
  t.offload(attention, SavedFormat::compute, t.e() * w.out, OffloadModule::attn_proj);
  if (plan.attention_kernel != AttentionKernel::unfused) {
    t.in(OffloadModule::core_attn);
    t.add(attention, SavedFormat::fp32, kFp32 * w.heads);
    t.in(std::nullopt);
  } else if (!sel.core_attn) {
    const double scores = w.heads * dbl(a.sequence_length);  // per query token: one row per local head
    t.activations(attention, scores);
    if (a.dropout.attention > 0) {
      t.add(attention, SavedFormat::mask, kMaskBytes * scores);
      t.activations(attention, scores);
    }
  }
  if (a.dropout.hidden > 0) t.add(attention, SavedFormat::mask, kMaskBytes * dbl(a.d_model) * w.seq);
}

// A Mamba-2 mixer (Megatron-Core MambaMixer on mamba_ssm's mamba_split_conv1d_scan_combined, which
// saves in_proj's output and recomputes the conv and the scan's internals in backward): the norm
// input and output (in_proj's input), z/x/B/C/dt, the scan output, the gated norm's FP32 rstd (one
// per group) and its output (out_proj's input); hidden dropout's mask after the mixer.
void mamba_terms(const Architecture& a, const TpWidths& w, SavedTerms& t) {
  constexpr auto attention = &BlockActivations::attention;
  const double d = dbl(a.d_model), N = dbl(a.mamba->state_dim);
  t.activations(attention, d * w.seq);
  t.norm_output(attention, LinearClass::attention, w.seq, d);
  t.activations(attention, 2 * w.mamba_inner + 2 * w.mamba_groups * N + w.mamba_heads + w.mamba_inner);
  t.add(attention, SavedFormat::fp32, kFp32 * w.mamba_groups);
  t.linear_input(attention, LinearClass::attention, w.mamba_inner);
  if (a.dropout.hidden > 0)
    t.add(attention, SavedFormat::mask, kMaskBytes * d * w.seq);  // MambaLayer's bias-dropout-add
}

// An MoE layer's terms after its norm: FP32 router logits, FP32 probs + int64 indices of the
// top-K; the dispatched input; per routed row the up(/gate) output, the activation output and
// what the probabilities' multiply keeps (the expert output where the combine multiplies); the
// shared experts'. Expert TP: the grouped GEMMs run on the rows gathered from
// the ETP group (ETP x the rank's own) through 1/ETP of the hidden width, so the d-wide terms grow
// by ETP and the hidden ones stay.
void moe_terms(const Architecture& a, const ParallelPlan& plan, const TpWidths& w, const RoutedRows& routed,
               const SelectiveRecompute& sel, bool silu, SavedTerms& t) {
  constexpr auto mlp = &BlockActivations::mlp;
  const MoeSpec& m = *a.moe;
  const double d = dbl(a.d_model), seq = w.seq, up = dbl(a.mlp.up_factor());
  const double K = dbl(m.top_k), h = dbl(m.expert_hidden), hs = w.shared_hidden, shared = dbl(m.shared_experts);
  const double rows = routed.saved * seq, gathered = dbl(plan.etp);
  t.add(mlp, SavedFormat::fp32, (kFp32 * dbl(m.num_experts) + K * kFp32) * seq);
  t.add(mlp, SavedFormat::int64, K * kIndex * seq);
  // The dispatched input, the grouped GEMM's saved input: as it arrives when dispatched in FP8
  // (torchao's grouped GEMM saves a quantized input as given), else as the expert linear keeps it.
  const GemmPrecision dispatched = plan.precision.ep_dispatch;
  t.in(OffloadModule::expert_fc1);
  if (dispatched != GemmPrecision::bf16) {
    t.add(mlp, SavedTerms::format_of(dispatched),
          routed.dispatch * seq * gathered * d * quantized_bytes_per_element(dispatched));
  } else {
    t.linear_input(mlp, LinearClass::routed_expert, routed.dispatch * seq * gathered * d);
  }
  t.in(OffloadModule::moe_act);
  t.activations(mlp, rows * up * h);
  t.in(std::nullopt);
  if (!sel.routed_act) t.linear_input(mlp, LinearClass::routed_expert, rows * h);
  if (silu && !sel.routed_act) t.activations(mlp, rows * h);
  // What the multiply by the router probabilities keeps (models/moe/expert_probs.hpp).
  if (plan.expert_probs == ExpertProbs::combine_fp32 && !plan.compiled_blocks) {
    t.add(mlp, SavedFormat::fp32, kFp32 * rows * gathered * d);
  } else if (plan.expert_probs != ExpertProbs::activation) {
    t.activations(mlp, rows * gathered * d);
  } else if (plan.eager_pointwise() && !sel.routed_act) {
    t.activations(mlp, rows * h);
  }
  if (sel.shared_experts) return;
  t.extra_quantized_copy(mlp, LinearClass::shared_expert, shared * d * seq);
  t.activations(mlp, shared * up * hs);
  if (!sel.shared_act) t.swiglu_product(mlp, LinearClass::shared_expert, shared * hs);
  if (silu && !sel.shared_act) t.activations(mlp, shared * hs);
}

// What a block saves without a checkpoint (`kept`), and the part of it the plan's offload
// modules move to the host between the forward and the backward (`offloaded`).
struct BlockSaved {
  BlockActivations kept, offloaded;
};

BlockSaved saved_without_checkpointing(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                       const RoutedRows& routed) {
  const TpWidths w = tp_widths(a, plan);
  const double d = dbl(a.d_model), seq = w.seq, up = dbl(a.mlp.up_factor());
  constexpr auto mlp = &BlockActivations::mlp;
  SavedTerms t(plan, plan.offload_modules.empty() ? 0.0 : dbl(batch_shape(plan, a).microbatch_tokens));
  const LayerSpec spec = a.layer(layer);
  if (spec.mixer == Mixer::attention) attention_terms(a, plan, w, t);
  if (spec.mixer == Mixer::mamba) mamba_terms(a, w, t);
  // Selective recompute drops the SwiGLU products it redoes, or Megatron-Core's modules what they
  // rebuild: an MoE layer's pre-MLP norm output (layernorm), all but its input (moe), the shared
  // experts' (shared_experts), a dense MLP's all but its input (mlp; its norm is inside fc1).
  const SelectiveRecompute sel = selective_recompute(plan);
  // PyTorch's eager gated activation (kernels.pointwise "eager") keeps silu's output too: the
  // product's backward (MulBackward0) saves both of its operands, silu's its input.
  const bool silu = plan.eager_pointwise() && a.mlp.gated();
  if (spec.ffn == Ffn::moe) {
    // Norm input and output (the router's BF16 input; a compiled block keeps the FP32 rstd and
    // recomputes it); the rest unless the whole layer is recomputed. The routed experts' grouped
    // GEMMs are ops of their own, so what they save stays as moe_terms says.
    t.in(OffloadModule::mlp_norm);
    t.activations(mlp, d * seq);
    t.in(std::nullopt);
    if (!sel.layernorm) t.norm_output(mlp, std::nullopt, seq, d);
    if (!sel.moe) moe_terms(a, plan, w, routed, sel, silu, t);
  } else if (spec.ffn == Ffn::dense) {
    // Norm input; its output, the up(/gate) GEMM's input (fused into Transformer Engine's
    // LayerNormLinear like the QKV one); the up(/gate) output; the activation output (down input).
    const double h = w.dense_hidden;
    t.activations(mlp, d * seq);
    if (!sel.mlp) {
      t.norm_output(mlp, LinearClass::dense_mlp, seq, d);
      t.activations(mlp, up * h);
      if (!sel.dense_act) t.swiglu_product(mlp, LinearClass::dense_mlp, h);
      if (silu && !sel.dense_act) t.activations(mlp, h);
    }
  }
  // Hidden dropout after the feed-forward part: its mask (MLP or MoE output, the rank's sequence share).
  if (spec.ffn != Ffn::none && a.dropout.hidden > 0) t.add(mlp, SavedFormat::mask, kMaskBytes * d * seq);
  return {t.result(), t.offloaded()};
}

// `kept` less what is on the host.
BlockActivations resident(const BlockSaved& s) {
  BlockActivations r = s.kept;
  r.attention -= s.offloaded.attention;
  r.mlp -= s.offloaded.mlp;
  for (std::size_t f = 0; f < kSavedFormats; ++f) r.by_format[f] -= s.offloaded.by_format[f];
  return r;
}

}  // namespace

BlockActivations saved_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                 const RoutedRows& routed) {
  const double e = bytes_of(plan.precision.compute);
  switch (plan.recompute) {
    case Recompute::full: {
      // The block input (the rank's sequence shard under SP); a layer past recompute_num_layers
      // keeps all it saves.
      if (!whole_layer_recompute(plan, a, layer)) break;
      BlockActivations b{e * dbl(a.d_model) * plan.sequence_share(), 0.0, {}};
      b.by_format[static_cast<std::size_t>(SavedFormat::compute)] = b.attention;
      return b;
    }
    case Recompute::selective_op: return op_checkpointed(a, plan, e);
    case Recompute::none:
    case Recompute::selective: break;
  }
  return resident(saved_without_checkpointing(a, layer, plan, routed));
}

BlockActivations offloaded_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                     const RoutedRows& routed) {
  if (plan.offload_modules.empty() || plan.recompute == Recompute::full || plan.recompute == Recompute::selective_op)
    return {};
  return saved_without_checkpointing(a, layer, plan, routed).offloaded;
}

double recomputed_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                            const RoutedRows& routed) {
  switch (plan.recompute) {
    case Recompute::full:
      return whole_layer_recompute(plan, a, layer) ? saved_without_checkpointing(a, layer, plan, routed).kept.total()
                                                   : 0.0;
    case Recompute::selective_op:
      return saved_without_checkpointing(a, layer, plan, routed).kept.total() -
             op_checkpointed(a, plan, bytes_of(plan.precision.compute)).total();
    case Recompute::selective:
      if (selective_recompute(plan).modules) {
        // Each module is rebuilt just before its own backward: the larger part's at once.
        ParallelPlan kept = plan;
        kept.recompute = Recompute::none;
        kept.recompute_modules = {};
        const BlockActivations all = saved_without_checkpointing(a, layer, kept, routed).kept;
        const BlockSaved saved = saved_without_checkpointing(a, layer, plan, routed);
        return std::max(all.attention - saved.kept.attention, all.mlp - saved.kept.mlp) + saved.offloaded.total();
      }
      break;
    case Recompute::none: break;
  }
  // What offloading moved to the host is back on the GPU for the block's backward.
  return offloaded_per_token(a, layer, plan, routed).total();
}

double backward_working_per_token(const Architecture& a, std::int64_t layer, const ParallelPlan& plan,
                                  const RoutedRows& routed) {
  const double e = bytes_of(plan.precision.compute);
  const double d = dbl(a.d_model);
  const TpWidths w = tp_widths(a, plan);
  // Residual-stream gradient in and out, plus the widest internal gradient of the block.
  const LayerSpec spec = a.layer(layer);
  const double up = dbl(a.mlp.up_factor());
  double widest = 0;
  if (spec.mixer == Mixer::attention) widest = e * (w.q + w.kv + w.v);
  if (spec.mixer == Mixer::mamba) widest = e * (2 * w.mamba_inner + 2 * w.mamba_groups * dbl(a.mamba->state_dim));
  if (spec.ffn == Ffn::moe) {
    widest = std::max(widest, routed.working * w.seq * e * up * dbl(a.moe->expert_hidden));
  } else if (spec.ffn == Ffn::dense) {
    widest = std::max(widest, e * up * w.dense_hidden);
  }
  return 2 * e * d * w.seq + widest;
}

}  // namespace moesim
