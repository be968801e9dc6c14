#include "models/arch/inventory.hpp"

namespace moesim {

bool TensorInfo::is_matmul() const { return cls != TensorClass::norm && cls != TensorClass::embedding; }

namespace {
struct Builder {
  Inventory inv;
  void add(std::string name, std::vector<std::int64_t> shape, TensorClass cls, std::int64_t layer) {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    inv.tensors.push_back({std::move(name), std::move(shape), n, cls, layer});
  }
};

// SwiGLU MLP: a fused up/gate projection [2h, d] and a down projection [d, h] (bias-free).
void add_swiglu(Builder& b, const std::string& prefix, std::int64_t d, std::int64_t h, TensorClass cls,
                std::int64_t layer) {
  b.add(prefix + ".w_up_gate", {2 * h, d}, cls, layer);
  b.add(prefix + ".w_down", {d, h}, cls, layer);
}
}  // namespace

Inventory build_inventory(const Architecture& a) {
  Builder b;
  const std::int64_t d = a.d_model;
  b.add("embeddings", {a.vocab_size, d}, TensorClass::embedding, -1);
  for (std::int64_t l = 0; l < a.num_layers; ++l) {
    const std::string p = "blocks." + std::to_string(l);
    b.add(p + ".attention.w_q", {a.attn_dim(), d}, TensorClass::attention, l);
    b.add(p + ".attention.w_k", {a.kv_dim(), d}, TensorClass::attention, l);
    b.add(p + ".attention.w_v", {a.kv_dim(), d}, TensorClass::attention, l);
    if (a.attention.qk_norm) {
      b.add(p + ".attention.q_norm", {a.attn_dim()}, TensorClass::norm, l);
      b.add(p + ".attention.k_norm", {a.kv_dim()}, TensorClass::norm, l);
    }
    b.add(p + ".attention.w_out", {d, a.attn_dim()}, TensorClass::attention, l);
    b.add(p + ".attention_norm", {d}, TensorClass::norm, l);
    if (a.is_moe_layer(l)) {
      const MoeSpec& m = *a.moe;
      b.add(p + ".moe.router", {m.num_experts, d}, TensorClass::router, l);
      for (std::int64_t s = 0; s < m.shared_experts; ++s) {
        add_swiglu(b, p + ".moe.shared." + std::to_string(s), d, m.shared_hidden, TensorClass::shared_expert, l);
      }
      // Routed experts are stacked: [N, 2h_e, d] up/gate and [N, d, h_e] down (DESIGN.md).
      b.add(p + ".moe.experts.w_up_gate", {m.num_experts, 2 * m.expert_hidden, d}, TensorClass::routed_expert, l);
      b.add(p + ".moe.experts.w_down", {m.num_experts, d, m.expert_hidden}, TensorClass::routed_expert, l);
    } else {
      add_swiglu(b, p + ".mlp", d, a.dense_hidden, TensorClass::dense_mlp, l);
    }
    b.add(p + ".feed_forward_norm", {d}, TensorClass::norm, l);
  }
  b.add("lm_head.norm", {d}, TensorClass::norm, a.num_layers);
  if (!a.tie_embeddings) b.add("lm_head.w_out", {a.vocab_size, d}, TensorClass::lm_head, a.num_layers);

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
