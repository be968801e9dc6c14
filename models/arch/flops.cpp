#include "models/arch/flops.hpp"

#include <memory>

#include "models/common/cost_types.hpp"
#include "models/common/units.hpp"

namespace moesim {

double mean_causal_keys(double S, double window) {
  if (window <= 0 || window >= S) return (S + 1.0) / 2.0;
  return (S * window - window * (window - 1.0) / 2.0) / S;
}

double attention_weights(const Architecture& a) {
  const AttentionSpec& at = a.attention;
  const double d = dbl(a.d_model), q = dbl(a.attn_dim()), out = dbl(a.attn_out_dim());
  if (at.kind == AttentionKind::gqa) return d * (q + dbl(a.kv_dim()) + dbl(a.v_dim())) + out * d;
  const double ql = dbl(at.q_lora_rank), kvl = dbl(at.kv_lora_rank), H = dbl(at.num_heads);
  const double q_path = at.q_lora_rank > 0 ? d * ql + ql * q : d * q;
  const double kv_path = d * (kvl + dbl(at.qk_rope_head_dim)) + kvl * H * dbl(at.qk_nope_head_dim + at.v_head_dim);
  return q_path + kv_path + out * d;
}

double ssd_scan_flops(const MambaSpec& m) {
  return ssd_flops_per_token(
      {1, dbl(m.num_heads), dbl(m.head_dim), dbl(m.groups), dbl(m.state_dim), dbl(m.chunk_size)});
}

namespace {

double mamba_weights(const Architecture& a) {
  const MambaSpec& m = *a.mamba;
  return dbl(a.d_model) * dbl(m.in_proj_width() + m.d_inner());
}

// The FLOPs of an MLP d -> h -> d per token, forward and backward: 6 per weight, 3 weights of d x h
// when gated, 2 when not.
double mlp_flops(const Architecture& a, double h) { return 6.0 * dbl(a.d_model) * h * dbl(a.mlp.up_factor() + 1); }

// One layer as the model computes it: 6 FLOPs per weight per token (2 forward, 4 backward), the
// router included, the attention scores over the keys a causal (windowed) query reads, the SSD
// scan's matmul-form FLOPs three times (forward, and a backward of twice the forward).
void count_layer(const Architecture& a, const LayerSpec& s, FlopsPerToken& f) {
  const double S = dbl(a.sequence_length);
  if (s.mixer == Mixer::attention) {
    f.attention_projections += 6.0 * attention_weights(a);
    f.attention_scores += 6.0 * mean_causal_keys(S, dbl(s.window)) * dbl(a.attn_dim() + a.attn_out_dim());
  }
  if (s.mixer == Mixer::mamba) f.mamba += 6.0 * mamba_weights(a) + 3.0 * ssd_scan_flops(*a.mamba);
  if (s.ffn == Ffn::dense) f.dense_mlp += mlp_flops(a, dbl(a.dense_hidden));
  if (s.ffn == Ffn::moe) {
    const MoeSpec& m = *a.moe;
    f.router += 6.0 * dbl(a.d_model) * dbl(m.num_experts);
    const double routed = mlp_flops(a, dbl(m.expert_hidden)) * dbl(m.top_k);
    f.routed_experts += routed;
    f.experts += routed + mlp_flops(a, dbl(m.shared_hidden)) * dbl(m.shared_experts);
  }
}

// Olmo-core's benchmark formula (DESIGN.md, from Olmo-core's MoE benchmark FLOP counter):
// per layer 6(d*d_attn + 2*d*kv_heads*head_dim + d_attn*d) + 12*heads*head_dim*(S+1)/2 (causal
// half); dense MLP 18*d*h; MoE 6*d*N (router) + 18*d*h_e*K + 18*d*h_shared; plus 6*d*V. The same
// count carries to the other layer kinds: every weight 6x, a window's keys, the SSD scan, and each
// MTP module's block, input projection [d, 2d] and second pass through the head.
class OlmoCoreConvention final : public FlopConvention {
 public:
  OlmoCoreConvention()
      : FlopConvention(
            "olmo-core",
            "Olmo-core's MoE benchmark count: 6x weight FLOPs with the router, causal-half attention scores and the LM "
            "head") {}
  std::string_view source() const override {
    return "Olmo-core benchmark FLOPs/token (causal attention counted as (S+1)/2 keys, a window's keys as it reads "
           "them)";
  }
  FlopsPerToken per_token(const Architecture& a, const Inventory&) const override {
    FlopsPerToken f;
    f.convention = std::string(name());
    for (std::int64_t l = 0; l < a.num_layers; ++l) count_layer(a, a.layer(l), f);
    const double d = dbl(a.d_model), V = dbl(a.vocab_size);
    f.lm_head = 6.0 * d * V;
    if (a.mtp_layers > 0) {
      FlopsPerToken block;
      count_layer(a, a.mtp_block(), block);
      f.mtp = dbl(a.mtp_layers) * (block.parts() + 6.0 * 2.0 * d * d + 6.0 * d * V);
    }
    f.total = f.parts();
    return f;
  }
};

// Weight FLOPs: 6 per active matmul weight per token (2 forward, 4 backward; Kaplan et al. 2020),
// classified by tensor class. Shared by the PaLM and 6N conventions. MTP modules run the shared
// head once more each.
FlopsPerToken weight_flops(std::string_view convention, const Architecture& a, const Inventory& inv) {
  FlopsPerToken f;
  f.convention = std::string(convention);
  const double k_over_n = a.moe ? dbl(a.moe->top_k) / dbl(a.moe->num_experts) : 1.0;
  for (const auto& t : inv.tensors) {
    if (!t.is_matmul()) continue;
    const double n = dbl(t.numel);
    if (t.name.starts_with("mtp.")) {
      f.mtp += 6.0 * n * (t.cls == TensorClass::routed_expert ? k_over_n : 1.0);
      continue;
    }
    switch (t.cls) {
      case TensorClass::attention: f.attention_projections += 6.0 * n; break;
      case TensorClass::dense_mlp: f.dense_mlp += 6.0 * n; break;
      case TensorClass::router: f.router += 6.0 * n; break;
      case TensorClass::shared_expert: f.experts += 6.0 * n; break;
      case TensorClass::routed_expert:
        f.experts += 6.0 * n * k_over_n;
        f.routed_experts += 6.0 * n * k_over_n;
        break;
      case TensorClass::mamba: f.mamba += 6.0 * n; break;
      case TensorClass::lm_head: f.lm_head += 6.0 * n; break;
      default: break;
    }
  }
  const double head = 6.0 * dbl(a.d_model) * dbl(a.vocab_size);
  // A tied embedding still runs the output projection.
  if (a.tie_embeddings) f.lm_head += head;
  f.mtp += dbl(a.mtp_layers) * head;
  return f;
}

// PaLM (Chowdhery et al. 2022, App. B): 6N + 12*L*H*Q*T with full (non-causal) attention over T
// = S keys, on every attention layer (MLA: q/k and v head widths apart). torchtitan's
// get_num_flop_per_token and Narayanan et al. 2021's dense-GPT formula count the same way.
class PalmConvention final : public FlopConvention {
 public:
  PalmConvention()
      : FlopConvention(
            "palm",
            "PaLM (Chowdhery et al. 2022, App. B): 6N plus full (non-causal) attention scores, as torchtitan counts "
            "(get_num_flop_per_token)") {}
  std::string_view source() const override {
    return "PaLM App. B: 6 x active matmul params + 12*L*heads*head_dim*S (no causal discount, no window)";
  }
  FlopsPerToken per_token(const Architecture& a, const Inventory& inv) const override {
    FlopsPerToken f = weight_flops(name(), a, inv);
    std::int64_t attention_layers = 0;
    for (std::int64_t l = 0; l < a.num_layers; ++l) attention_layers += a.layer_mixer(l) == Mixer::attention ? 1 : 0;
    const double per_layer = 6.0 * dbl(a.attn_dim() + a.attn_out_dim()) * dbl(a.sequence_length);
    f.attention_scores = dbl(attention_layers) * per_layer;
    f.mtp += dbl(a.mtp_layers) * per_layer;
    f.total = f.parts();
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
    f.total = f.parts();
    return f;
  }
};

}  // namespace

const Registry<FlopConvention>& flop_conventions() {
  static const auto registry = [] {
    auto r = make_registry<FlopConvention, OlmoCoreConvention, PalmConvention, SixNConvention>("FLOP convention");
    r.add(megatron_flop_convention());
    return r;
  }();
  return registry;
}

}  // namespace moesim
