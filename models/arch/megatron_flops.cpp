// Megatron-LM's model FLOP count (megatron/training/training.py num_floating_point_operations,
// transformer_flops and hybrid_flops), per token of an unpacked batch: every GEMM 3 x 2 FLOPs per
// multiply-add; attention's core as a causal half of S keys (no window discount); no router; MLA
// with its low-rank norms (the "+ 1" terms); Mamba layers with d_in = 2 d and a 7 d_in N scan;
// each MTP depth a layer of the last layer's kind, its norms and [2d, d] projection, and another
// pass through the logits.
#include <memory>

#include "models/arch/flops.hpp"
#include "models/common/units.hpp"

namespace moesim {

namespace {

class MegatronConvention final : public FlopConvention {
 public:
  MegatronConvention()
      : FlopConvention("megatron",
                       "Megatron-LM's num_floating_point_operations: 6 per GEMM weight without the router, causal "
                       "half of S keys with no window discount, MTP layers and logits, Mamba with d_in = 2d") {}
  std::string_view source() const override {
    return "Megatron-LM megatron/training/training.py num_floating_point_operations (transformer_flops, "
           "hybrid_flops)";
  }
  FlopsPerToken per_token(const Architecture& a, const Inventory&) const override {
    FlopsPerToken f;
    f.convention = std::string(name());
    for (std::int64_t l = 0; l < a.num_layers; ++l) count(a, a.layer(l), f);
    const double d = dbl(a.d_model), V = dbl(a.vocab_size), D = dbl(a.mtp_layers);
    f.lm_head = 6.0 * d * V;
    if (a.mtp_layers > 0) {
      FlopsPerToken block;
      count(a, a.mtp_block(), block);
      f.mtp = D * (block.parts() + 6.0 * (3.0 * d + 2.0 * d * d) + 6.0 * d * V);
    }
    f.total = f.parts();  // the router stays 0: Megatron does not count it
    return f;
  }

 private:
  static void count(const Architecture& a, const LayerSpec& s, FlopsPerToken& f) {
    const double d = dbl(a.d_model), S = dbl(a.sequence_length);
    const double ffn = a.mlp.gated() ? 3.0 : 2.0;  // args.swiglu
    if (s.mixer == Mixer::attention) {
      const AttentionSpec& at = a.attention;
      if (at.kind == AttentionKind::mla) {
        const double H = dbl(at.num_heads), qk = dbl(at.qk_head_dim()), kvl = dbl(at.kv_lora_rank);
        const double q_term = at.q_lora_rank > 0 ? dbl(at.q_lora_rank) * (d + H * qk + 1.0) : d * H * qk;
        f.attention_projections += 6.0 * (q_term + kvl * (d + H * dbl(at.qk_nope_head_dim + at.v_head_dim) + 1.0) +
                                          d * dbl(at.qk_rope_head_dim) + H * dbl(at.v_head_dim) * d);
        f.attention_scores += 6.0 * S * (H * qk / 2.0 + H * dbl(at.v_head_dim) / 2.0);
      } else {
        const double q = dbl(a.attn_dim()), kv = dbl(a.kv_dim());
        f.attention_projections += 6.0 * (d * (q + 2.0 * kv) + q * d);
        f.attention_scores += 6.0 * S * q;
      }
    }
    if (s.mixer == Mixer::mamba) {
      const MambaSpec& m = *a.mamba;
      const double d_in = 2.0 * d, G = dbl(m.groups), N = dbl(m.state_dim), H = dbl(m.num_heads);
      f.mamba += 3.0 * (2.0 * d * (2.0 * d_in + 2.0 * G * N + H) + 7.0 * d_in * N + 2.0 * d_in * d);
    }
    if (s.ffn == Ffn::dense) f.dense_mlp += 6.0 * d * dbl(a.dense_hidden) * ffn;
    if (s.ffn == Ffn::moe) {
      const MoeSpec& m = *a.moe;
      const double routed = 6.0 * d * dbl(m.expert_hidden) * dbl(m.top_k) * ffn;
      f.routed_experts += routed;
      f.experts += routed + 6.0 * d * dbl(m.shared_hidden * m.shared_experts) * ffn;
    }
  }
};

}  // namespace

std::unique_ptr<FlopConvention> megatron_flop_convention() { return std::make_unique<MegatronConvention>(); }

}  // namespace moesim
