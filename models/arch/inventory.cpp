#include "models/arch/inventory.hpp"

namespace moesim {

bool TensorInfo::is_matmul() const { return cls != TensorClass::norm && cls != TensorClass::embedding; }

namespace {
struct Builder {
  const Architecture& a;
  Inventory inv;
  void add(std::string name, std::vector<std::int64_t> shape, TensorClass cls, std::int64_t layer) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    inv.tensors.push_back({std::move(name), std::move(shape), n, cls, layer});
  }
  // A norm over `width` (RMSNorm: a weight; LayerNorm: a weight and, unless bias-free, a bias).
  void norm(const std::string& name, std::int64_t width, std::int64_t layer) {
    add(name, {width}, TensorClass::norm, layer);
    if (a.norm_bias) add(name + ".bias", {width}, TensorClass::norm, layer);
  }
  // A linear [out, in] of class `cls`, with a bias of `out` when `bias`.
  void linear(const std::string& name, std::int64_t out, std::int64_t in, TensorClass cls, std::int64_t layer,
              bool bias) {
    add(name, {out, in}, cls, layer);
    if (bias) add(name + ".bias", {out}, TensorClass::norm, layer);
  }
  // An MLP d -> h -> d: gated (a fused up/gate projection [2h, d]) or not ([h, d]), then down.
  void mlp(const std::string& prefix, std::int64_t h, TensorClass cls, std::int64_t layer) {
    const std::int64_t d = a.d_model;
    linear(prefix + (a.mlp.gated() ? ".w_up_gate" : ".w_up"), a.mlp.up_factor() * h, d, cls, layer, a.mlp.bias);
    linear(prefix + ".w_down", d, h, cls, layer, a.mlp.bias);
  }
  void attention(const std::string& p, std::int64_t l);
  void mamba(const std::string& p, std::int64_t l);
  void ffn(const std::string& p, Ffn kind, std::int64_t l);
};

void Builder::attention(const std::string& p, std::int64_t l) {
  const AttentionSpec& at = a.attention;
  const std::int64_t d = a.d_model;
  const bool qkv_bias = at.bias != AttentionBias::none;
  if (at.kind == AttentionKind::mla) {
    // DeepSeek-V3 modeling: q_a_proj, q_a_layernorm, q_b_proj; kv_a_proj_with_mqa (the latent and
    // the shared RoPE key), kv_a_layernorm, kv_b_proj (every head's k_nope and v); o_proj.
    if (at.q_lora_rank > 0) {
      linear(p + ".attention.w_q_a", at.q_lora_rank, d, TensorClass::attention, l, qkv_bias);
      add(p + ".attention.q_a_norm", {at.q_lora_rank}, TensorClass::norm, l);
      linear(p + ".attention.w_q_b", a.attn_dim(), at.q_lora_rank, TensorClass::attention, l, qkv_bias);
    } else {
      linear(p + ".attention.w_q", a.attn_dim(), d, TensorClass::attention, l, qkv_bias);
    }
    linear(p + ".attention.w_kv_a", at.kv_lora_rank + at.qk_rope_head_dim, d, TensorClass::attention, l, qkv_bias);
    add(p + ".attention.kv_a_norm", {at.kv_lora_rank}, TensorClass::norm, l);
    linear(p + ".attention.w_kv_b", at.num_heads * (at.qk_nope_head_dim + at.v_head_dim), at.kv_lora_rank,
           TensorClass::attention, l, qkv_bias);
  } else {
    linear(p + ".attention.w_q", a.attn_dim(), d, TensorClass::attention, l, qkv_bias);
    linear(p + ".attention.w_k", a.kv_dim(), d, TensorClass::attention, l, qkv_bias);
    linear(p + ".attention.w_v", a.v_dim(), d, TensorClass::attention, l, qkv_bias);
  }
  if (at.qk_norm && at.qk_norm_scope == QkNormScope::head) {  // one weight per head feature, shared by the heads
    add(p + ".attention.q_norm", {at.qk_head_dim()}, TensorClass::norm, l);
    add(p + ".attention.k_norm", {at.qk_head_dim()}, TensorClass::norm, l);
  } else if (at.qk_norm) {
    add(p + ".attention.q_norm", {a.attn_dim()}, TensorClass::norm, l);
    add(p + ".attention.k_norm", {a.kv_dim()}, TensorClass::norm, l);
  }
  if (at.sinks) add(p + ".attention.sinks", {at.num_heads}, TensorClass::norm, l);
  linear(p + ".attention.w_out", d, a.attn_out_dim(), TensorClass::attention, l, at.bias == AttentionBias::all);
  norm(p + ".attention_norm", d, l);
}

// mamba_ssm Mamba2 / Megatron-Core MambaMixer: in_proj to z, x, B, C, dt; a depthwise conv1d
// (with bias) over x, B, C; per head dt_bias, A_log and D; a gated RMSNorm over d_inner; out_proj.
void Builder::mamba(const std::string& p, std::int64_t l) {
  const MambaSpec& m = *a.mamba;
  const std::int64_t d = a.d_model;
  add(p + ".mamba.in_proj", {m.in_proj_width(), d}, TensorClass::mamba, l);
  add(p + ".mamba.conv1d", {m.conv_dim(), 1, m.conv_kernel}, TensorClass::norm, l);
  add(p + ".mamba.conv1d.bias", {m.conv_dim()}, TensorClass::norm, l);
  add(p + ".mamba.dt_bias", {m.num_heads}, TensorClass::norm, l);
  add(p + ".mamba.A_log", {m.num_heads}, TensorClass::norm, l);
  add(p + ".mamba.D", {m.num_heads}, TensorClass::norm, l);
  add(p + ".mamba.norm", {m.d_inner()}, TensorClass::norm, l);
  add(p + ".mamba.out_proj", {d, m.d_inner()}, TensorClass::mamba, l);
  norm(p + ".mixer_norm", d, l);
}

void Builder::ffn(const std::string& p, Ffn kind, std::int64_t l) {
  const std::int64_t d = a.d_model;
  if (kind == Ffn::moe) {
    const MoeSpec& m = *a.moe;
    add(p + ".moe.router", {m.num_experts, d}, TensorClass::router, l);
    if (m.router_bias) add(p + ".moe.router.bias", {m.num_experts}, TensorClass::norm, l);
    for (std::int64_t s = 0; s < m.shared_experts; ++s)
      mlp(p + ".moe.shared." + std::to_string(s), m.shared_hidden, TensorClass::shared_expert, l);
    // Routed experts are stacked: [N, 2h_e, d] up/gate (or [N, h_e, d]) and [N, d, h_e] down.
    const std::int64_t up = a.mlp.up_factor() * m.expert_hidden;
    add(p + (a.mlp.gated() ? ".moe.experts.w_up_gate" : ".moe.experts.w_up"), {m.num_experts, up, d},
        TensorClass::routed_expert, l);
    add(p + ".moe.experts.w_down", {m.num_experts, d, m.expert_hidden}, TensorClass::routed_expert, l);
    if (a.mlp.bias) {
      add(p + ".moe.experts.up_bias", {m.num_experts, up}, TensorClass::routed_expert, l);
      add(p + ".moe.experts.down_bias", {m.num_experts, d}, TensorClass::routed_expert, l);
    }
  } else {
    mlp(p + ".mlp", a.dense_hidden, TensorClass::dense_mlp, l);
  }
  norm(p + ".feed_forward_norm", d, l);
}
}  // namespace

Inventory build_inventory(const Architecture& a) {
  Builder b{a, {}};
  const std::int64_t d = a.d_model;
  b.add("embeddings", {a.vocab_size, d}, TensorClass::embedding, -1);
  if (a.position == PositionKind::learned)
    b.add("position_embeddings", {a.max_positions, d}, TensorClass::embedding, -1);
  for (std::int64_t l = 0; l < a.num_layers; ++l) {
    const std::string p = "blocks." + std::to_string(l);
    const LayerSpec s = a.layer(l);
    if (s.mixer == Mixer::attention) b.attention(p, l);
    if (s.mixer == Mixer::mamba) b.mamba(p, l);
    if (s.ffn != Ffn::none) b.ffn(p, s.ffn, l);
  }
  b.norm("lm_head.norm", d, a.num_layers);
  if (!a.tie_embeddings) b.add("lm_head.w_out", {a.vocab_size, d}, TensorClass::lm_head, a.num_layers);
  // DeepSeek-V3 Section 2.2: each MTP module shares the embedding and the output head; it holds
  // two norms (the hidden state's and the next token's embedding), a projection [d, 2d], a block
  // like the last layer and the head's norm. It sits with the head, after the last layer.
  for (std::int64_t k = 0; k < a.mtp_layers; ++k) {
    const std::string p = "mtp." + std::to_string(k);
    b.norm(p + ".hidden_norm", d, a.num_layers);
    b.norm(p + ".embedding_norm", d, a.num_layers);
    b.add(p + ".w_proj", {d, 2 * d}, TensorClass::attention, a.num_layers);
    b.attention(p, a.num_layers);
    b.ffn(p, a.mtp_block().ffn, a.num_layers);
    b.norm(p + ".head_norm", d, a.num_layers);
  }

  for (const auto& t : b.inv.tensors) {
    const double n = static_cast<double>(t.numel);
    b.inv.params_total += n;
    // A token evaluates K of the N stacked experts (seed Section 4.1: 3Kdh_e of 3Ndh_e).
    b.inv.params_active += t.cls == TensorClass::routed_expert
                               ? n * static_cast<double>(a.moe->top_k) / static_cast<double>(a.moe->num_experts)
                               : n;
  }
  return b.inv;
}

}  // namespace moesim
