#include "models/arch/flops.hpp"
#include "models/common/units.hpp"

namespace moesim {

namespace {

// Olmo-core's benchmark formula (DESIGN.md, from Olmo-core's MoE benchmark FLOP counter):
// per layer 6(d*d_attn + 2*d*kv_heads*head_dim + d_attn*d) + 12*heads*head_dim*(S+1)/2 (causal
// half); dense MLP 18*d*h; MoE 6*d*N (router) + 18*d*h_e*K + 18*d*h_shared; plus 6*d*V.
class OlmoCoreConvention final : public FlopConvention {
 public:
  OlmoCoreConvention()
      : FlopConvention(
            "olmo-core",
            "Olmo-core's MoE benchmark count: 6x weight FLOPs with the router, causal-half attention scores and the LM "
            "head") {}
  std::string_view source() const override {
    return "Olmo-core benchmark FLOPs/token (causal attention counted as (S+1)/2 keys)";
  }
  FlopsPerToken per_token(const Architecture& a, const Inventory&) const override {
    FlopsPerToken f;
    f.convention = std::string(name());
    const double d = dbl(a.d_model), L = dbl(a.num_layers), S = dbl(a.sequence_length);
    f.attention_projections = L * 6.0 * (d * dbl(a.attn_dim()) + 2.0 * d * dbl(a.kv_dim()) + dbl(a.attn_dim()) * d);
    f.attention_scores = L * 12.0 * dbl(a.attn_dim()) * (S + 1.0) / 2.0;
    for (std::int64_t l = 0; l < a.num_layers; ++l) {
      if (a.is_moe_layer(l)) {
        const MoeSpec& m = *a.moe;
        f.router += 6.0 * d * dbl(m.num_experts);
        const double routed = 18.0 * d * dbl(m.expert_hidden) * dbl(m.top_k);
        f.routed_experts += routed;
        f.experts += routed + 18.0 * d * dbl(m.shared_hidden) * dbl(m.shared_experts);
      } else {
        f.dense_mlp += 18.0 * d * dbl(a.dense_hidden);
      }
    }
    f.lm_head = 6.0 * d * dbl(a.vocab_size);
    f.total = f.attention_projections + f.attention_scores + f.dense_mlp + f.router + f.experts + f.lm_head;
    return f;
  }
};

// Weight FLOPs: 6 per active matmul weight per token (2 forward, 4 backward; Kaplan et al. 2020),
// classified by tensor class. Shared by the PaLM and 6N conventions.
FlopsPerToken weight_flops(std::string_view convention, const Architecture& a, const Inventory& inv) {
  FlopsPerToken f;
  f.convention = std::string(convention);
  const double k_over_n = a.moe ? dbl(a.moe->top_k) / dbl(a.moe->num_experts) : 1.0;
  for (const auto& t : inv.tensors) {
    if (!t.is_matmul()) continue;
    const double n = dbl(t.numel);
    switch (t.cls) {
      case TensorClass::attention: f.attention_projections += 6.0 * n; break;
      case TensorClass::dense_mlp: f.dense_mlp += 6.0 * n; break;
      case TensorClass::router: f.router += 6.0 * n; break;
      case TensorClass::shared_expert: f.experts += 6.0 * n; break;
      case TensorClass::routed_expert:
        f.experts += 6.0 * n * k_over_n;
        f.routed_experts += 6.0 * n * k_over_n;
        break;
      case TensorClass::lm_head: f.lm_head += 6.0 * n; break;
      default: break;
    }
  }
  // A tied embedding still runs the output projection.
  if (a.tie_embeddings) f.lm_head += 6.0 * dbl(a.d_model) * dbl(a.vocab_size);
  return f;
}

// PaLM (Chowdhery et al. 2022, App. B): 6N + 12*L*H*Q*T with full (non-causal) attention over T
// = S keys. Megatron-LM's (Narayanan et al. 2021) formula counts a dense GPT the same way.
class PalmConvention final : public FlopConvention {
 public:
  PalmConvention()
      : FlopConvention(
            "palm",
            "PaLM (Chowdhery et al. 2022, App. B): 6N plus full (non-causal) attention scores, as Megatron-LM counts a "
            "GPT") {}
  std::string_view source() const override {
    return "PaLM App. B: 6 x active matmul params + 12*L*heads*head_dim*S (no causal discount)";
  }
  FlopsPerToken per_token(const Architecture& a, const Inventory& inv) const override {
    FlopsPerToken f = weight_flops(name(), a, inv);
    f.attention_scores = 12.0 * dbl(a.num_layers) * dbl(a.attn_dim()) * dbl(a.sequence_length);
    f.total = f.attention_projections + f.attention_scores + f.dense_mlp + f.router + f.experts + f.lm_head;
    return f;
  }
};

// Kaplan et al. 2020 "C = 6N": weights only, no attention-score term.
class SixNConvention final : public FlopConvention {
 public:
  SixNConvention()
      : FlopConvention("6n", "Kaplan et al. 2020: 6 FLOPs per active weight per token, no attention-score term") {}
  std::string_view source() const override { return "Kaplan et al. 2020: 6 x active matmul params"; }
  FlopsPerToken per_token(const Architecture& a, const Inventory& inv) const override {
    FlopsPerToken f = weight_flops(name(), a, inv);
    f.total = f.attention_projections + f.dense_mlp + f.router + f.experts + f.lm_head;
    return f;
  }
};

}  // namespace

const Registry<FlopConvention>& flop_conventions() {
  static const auto registry =
      make_registry<FlopConvention, OlmoCoreConvention, PalmConvention, SixNConvention>("FLOP convention");
  return registry;
}

}  // namespace moesim
