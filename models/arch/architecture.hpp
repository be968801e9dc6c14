// A decoder-only model (dense, MoE or hybrid) as the user describes it in an architecture file:
// its layers, each a token mixer (attention of some kind, a Mamba-2 mixer) and a feed-forward part
// (a dense MLP, an MoE), and the variants current models are built from.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/common/enum_names.hpp"

namespace moesim {

class JsonReader;

// Grouped-query attention (MHA when kv heads = heads, MQA when 1) or DeepSeek-V2's multi-head
// latent attention (low-rank q and kv projections, decoupled RoPE dimensions).
enum class AttentionKind : std::uint8_t { gqa, mla };
inline constexpr EnumNames<AttentionKind, 2> kAttentionKindNames{
    "attention kind", {{{AttentionKind::gqa, "gqa"}, {AttentionKind::mla, "mla"}}}};
// Which attention linears carry a bias: none, the q/k/v projections (Qwen2), or those and the
// output projection (GPT-2, gpt-oss).
enum class AttentionBias : std::uint8_t { none, qkv, all };
inline constexpr EnumNames<AttentionBias, 3> kAttentionBiasNames{
    "attention bias", {{{AttentionBias::none, "none"}, {AttentionBias::qkv, "qkv"}, {AttentionBias::all, "all"}}}};

// What one QK-norm normalises: the whole q (and k) projection of a token, one weight per
// projected feature (OLMo 2, OLMoE, Olmo-core's default), or each head's vector with one weight
// of head_dim shared by the heads (Qwen3, Gemma 3, Megatron-Core's qk_layernorm, Olmo-core's
// use_head_qk_norm).
enum class QkNormScope : std::uint8_t { projection, head };
inline constexpr EnumNames<QkNormScope, 2> kQkNormScopeNames{
    "QK-norm scope", {{{QkNormScope::projection, "projection"}, {QkNormScope::head, "head"}}}};

struct AttentionSpec {
  AttentionKind kind = AttentionKind::gqa;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // GQA: num_heads % num_kv_heads == 0 (MLA: = num_heads)
  std::int64_t head_dim = 0;      // GQA: q, k and v head width
  bool qk_norm = false;           // RMSNorm on the q and k projections (OLMo 2 / Olmo-core)
  QkNormScope qk_norm_scope = QkNormScope::projection;
  AttentionBias bias = AttentionBias::none;
  // Per layer, cyclically: the sliding window in keys, -1 full causal attention (empty: all full).
  std::vector<std::int64_t> window_pattern;
  bool sinks = false;  // one learned sink logit per head (gpt-oss)
  // MLA (DeepSeek-V2 Section 2.1): q through a q_lora_rank bottleneck (0: projected directly),
  // k/v through a shared kv_lora_rank latent; each head's q/k are qk_nope + qk_rope wide, v is
  // v_head_dim wide; one RoPE key of qk_rope dims shared by all heads.
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;

  std::int64_t qk_head_dim() const {
    return kind == AttentionKind::mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim;
  }
  std::int64_t value_head_dim() const { return kind == AttentionKind::mla ? v_head_dim : head_dim; }
  std::int64_t key_heads() const { return kind == AttentionKind::mla ? num_heads : num_kv_heads; }
  bool operator==(const AttentionSpec&) const = default;
};

// The MLP's activation: gated (SwiGLU, GeGLU: an up and a gate projection) or not (GELU, ReLU,
// squared ReLU: one up projection).
enum class MlpActivation : std::uint8_t { swiglu, geglu, gelu, relu, relu2 };
inline constexpr EnumNames<MlpActivation, 5> kMlpActivationNames{"MLP activation",
                                                                 {{{MlpActivation::swiglu, "swiglu"},
                                                                   {MlpActivation::geglu, "geglu"},
                                                                   {MlpActivation::gelu, "gelu"},
                                                                   {MlpActivation::relu, "relu"},
                                                                   {MlpActivation::relu2, "relu2"}}}};
struct MlpSpec {
  MlpActivation activation = MlpActivation::swiglu;
  bool bias = false;  // biases on the MLP's (and experts') linears
  bool gated() const { return activation == MlpActivation::swiglu || activation == MlpActivation::geglu; }
  // Output columns of the up projection per hidden unit: 2 (up and gate) or 1.
  std::int64_t up_factor() const { return gated() ? 2 : 1; }
  bool operator==(const MlpSpec&) const = default;
};

enum class RouterScore : std::uint8_t { softmax, sigmoid };
inline constexpr EnumNames<RouterScore, 2> kRouterScoreNames{
    "router score", {{{RouterScore::softmax, "softmax"}, {RouterScore::sigmoid, "sigmoid"}}}};

struct MoeSpec {
  std::int64_t num_experts = 0;    // routed experts N
  std::int64_t top_k = 0;          // K routed experts per token
  std::int64_t expert_hidden = 0;  // h_e, hidden width of one routed expert
  std::int64_t shared_experts = 0;
  std::int64_t shared_hidden = 0;  // hidden width of one shared expert
  RouterScore router = RouterScore::softmax;
  bool router_bias = false;  // a per-expert bias in the router (gpt-oss; DeepSeek-V3's score correction)
  // Group-limited routing (DeepSeek-V3 n_group / topk_group): the experts form `expert_groups`
  // groups and a token's K experts lie in at most `groups_per_token` of them (0: unlimited).
  std::int64_t expert_groups = 0;
  std::int64_t groups_per_token = 0;
  bool operator==(const MoeSpec&) const = default;
};

// A Mamba-2 mixer (Dao & Gu 2024; mamba_ssm Mamba2, Megatron-Core MambaMixer): in_proj to z, x,
// B, C and dt; a depthwise causal conv over x, B, C; the SSD scan; a gated RMSNorm; out_proj.
struct MambaSpec {
  std::int64_t num_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t state_dim = 0;
  std::int64_t groups = 1;
  std::int64_t conv_kernel = 4;
  std::int64_t chunk_size = 256;
  std::int64_t d_inner() const { return num_heads * head_dim; }
  std::int64_t conv_dim() const { return d_inner() + 2 * groups * state_dim; }                       // x, B, C
  std::int64_t in_proj_width() const { return 2 * d_inner() + 2 * groups * state_dim + num_heads; }  // z,x,B,C,dt
  bool operator==(const MambaSpec&) const = default;
};

enum class NormKind : std::uint8_t { rmsnorm, layernorm };
inline constexpr EnumNames<NormKind, 2> kNormKindNames{
    "norm", {{{NormKind::rmsnorm, "rmsnorm"}, {NormKind::layernorm, "layernorm"}}}};
enum class PositionKind : std::uint8_t { rope, learned, alibi, none };
inline constexpr EnumNames<PositionKind, 4> kPositionKindNames{"position encoding",
                                                               {{{PositionKind::rope, "rope"},
                                                                 {PositionKind::learned, "learned"},
                                                                 {PositionKind::alibi, "alibi"},
                                                                 {PositionKind::none, "none"}}}};

// What one layer holds: a token mixer and a feed-forward part, either of which a hybrid layer may
// lack (Nemotron-H: a layer is one Mamba-2, attention, MLP or MoE).
enum class Mixer : std::uint8_t { attention, mamba, none };
enum class Ffn : std::uint8_t { dense, moe, none };
struct LayerSpec {
  Mixer mixer = Mixer::attention;
  Ffn ffn = Ffn::dense;
  std::int64_t window = 0;  // the attention's sliding window in keys (0: full causal)
  auto operator<=>(const LayerSpec&) const = default;
};

// Dropout probabilities (GPT-3, Megatron-LM's GPT models: attention_dropout, hidden_dropout).
// Each dropout that drops saves a one-byte mask per element for its backward (torch's dropout,
// Megatron's fused bias-dropout-add): after the attention and after the MLP (hidden), and over the
// attention probabilities where the kernel writes them (plan.kernels.attention "unfused"; flash
// attention regenerates its mask from the RNG state).
struct DropoutSpec {
  double attention = 0;
  double hidden = 0;
  bool operator==(const DropoutSpec&) const = default;
};

struct Architecture {
  std::string name;
  std::int64_t num_layers = 0;
  std::int64_t d_model = 0;
  std::int64_t vocab_size = 0;
  std::int64_t sequence_length = 0;  // training context length S
  bool tie_embeddings = false;
  NormKind norm = NormKind::rmsnorm;
  bool norm_bias = false;  // LayerNorm's bias
  PositionKind position = PositionKind::rope;
  std::int64_t max_positions = 0;  // rows of a learned position table
  AttentionSpec attention;
  MlpSpec mlp;
  DropoutSpec dropout;
  std::int64_t dense_hidden = 0;           // hidden width of dense MLP layers
  std::optional<MoeSpec> moe;              // absent: every feed-forward part is dense
  std::vector<std::int64_t> dense_layers;  // with moe: layers that keep a dense MLP
  std::optional<MambaSpec> mamba;
  // Hybrid models (Megatron-Core hybrid_override_pattern): one character per layer, M Mamba-2,
  // * attention, - MLP, E MoE; empty: every layer is attention + MLP/MoE.
  std::string layer_pattern;
  std::int64_t mtp_layers = 0;  // DeepSeek-V3 multi-token prediction modules (depth D)

  // Query width, key and value widths (all KV heads), attention output width.
  std::int64_t attn_dim() const { return attention.num_heads * attention.qk_head_dim(); }
  std::int64_t kv_dim() const { return attention.key_heads() * attention.qk_head_dim(); }
  std::int64_t v_dim() const { return attention.key_heads() * attention.value_head_dim(); }
  std::int64_t attn_out_dim() const { return attention.num_heads * attention.value_head_dim(); }
  LayerSpec layer(std::int64_t layer) const;
  bool is_moe_layer(std::int64_t layer) const { return layer_ffn(layer) == Ffn::moe; }
  Ffn layer_ffn(std::int64_t layer) const;
  Mixer layer_mixer(std::int64_t layer) const;
  std::int64_t moe_layer_count() const;
  bool has_mixer(Mixer m) const;
  bool has_ffn(Ffn f) const;
  // The layer an MTP module's block copies (DeepSeek-V3: the last layer's kind).
  LayerSpec mtp_block() const { return layer(num_layers - 1); }
  bool operator==(const Architecture&) const = default;
};

// Parses and validates one architecture object (strict: unknown keys are errors).
Architecture parse_architecture(const JsonReader& in);

}  // namespace moesim
