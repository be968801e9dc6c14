#include "models/arch/architecture.hpp"

#include <algorithm>

#include "models/common/json_reader.hpp"

namespace moesim {

namespace {
// Megatron-Core hybrid_layer_allocation Symbols: one character per layer.
constexpr char kMambaLayer = 'M', kAttentionLayer = '*', kMlpLayer = '-', kMoeLayer = 'E';
}  // namespace

LayerSpec Architecture::layer(std::int64_t l) const {
  LayerSpec s{layer_mixer(l), layer_ffn(l), 0};
  const auto& pattern = attention.window_pattern;
  if (s.mixer == Mixer::attention && !pattern.empty()) {
    const std::int64_t w = pattern[static_cast<std::size_t>(l) % pattern.size()];
    s.window = w > 0 && w < sequence_length ? w : 0;  // a window as long as the sequence is full attention
  }
  return s;
}

Ffn Architecture::layer_ffn(std::int64_t l) const {
  if (!layer_pattern.empty()) {
    if (l < 0 || l >= static_cast<std::int64_t>(layer_pattern.size())) return Ffn::none;  // not a layer
    const char c = layer_pattern[static_cast<std::size_t>(l)];
    return c == kMlpLayer ? Ffn::dense : c == kMoeLayer ? Ffn::moe : Ffn::none;
  }
  if (!moe) return Ffn::dense;
  return std::find(dense_layers.begin(), dense_layers.end(), l) == dense_layers.end() ? Ffn::moe : Ffn::dense;
}

Mixer Architecture::layer_mixer(std::int64_t l) const {
  if (layer_pattern.empty()) return Mixer::attention;
  if (l < 0 || l >= static_cast<std::int64_t>(layer_pattern.size())) return Mixer::none;  // not a layer
  const char c = layer_pattern[static_cast<std::size_t>(l)];
  return c == kMambaLayer ? Mixer::mamba : c == kAttentionLayer ? Mixer::attention : Mixer::none;
}

std::int64_t Architecture::moe_layer_count() const {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < num_layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

bool Architecture::has_mixer(Mixer m) const {
  for (std::int64_t l = 0; l < num_layers; ++l)
    if (layer_mixer(l) == m) return true;
  return false;
}

bool Architecture::has_ffn(Ffn f) const {
  for (std::int64_t l = 0; l < num_layers; ++l)
    if (layer_ffn(l) == f) return true;
  return false;
}

namespace {
// Upper bounds keep every count exact in a double and products inside int64.
constexpr double kMaxDim = 1 << 20;
constexpr double kMaxLayers = 4096;
constexpr double kMaxExperts = 65536;
constexpr double kMaxMtp = 16;

template <class E, std::size_t N>
E enum_or(const JsonReader& in, std::string_view key, const EnumNames<E, N>& names, E fallback) {
  if (!in.has(key)) return fallback;
  return names.parse(in.choice_in(key, names.names()));
}

void parse_mla(const JsonReader& in, AttentionSpec& a) {
  a.q_lora_rank = in.integer_or("q_lora_rank", 0, Range::between(0, kMaxDim));
  a.kv_lora_rank = in.integer("kv_lora_rank", Range::between(1, kMaxDim));
  a.qk_nope_head_dim = in.integer("qk_nope_head_dim", Range::between(1, kMaxDim));
  a.qk_rope_head_dim = in.integer("qk_rope_head_dim", Range::between(1, kMaxDim));
  a.v_head_dim = in.integer("v_head_dim", Range::between(1, kMaxDim));
  a.num_kv_heads = a.num_heads;  // every head has its own k and v, expanded from the latent
  for (const char* gqa_only : {"num_kv_heads", "head_dim"}) {
    if (in.has(gqa_only))
      in.fail(gqa_only,
              "not used by \"kind\": \"mla\" (its widths are qk_nope_head_dim, qk_rope_head_dim, v_head_dim)");
  }
}

AttentionSpec parse_attention(const JsonReader& in, std::int64_t sequence_length) {
  AttentionSpec a;
  a.kind = enum_or(in, "kind", kAttentionKindNames, AttentionKind::gqa);
  a.num_heads = in.integer("num_heads", Range::between(1, kMaxDim));
  if (a.kind == AttentionKind::mla) {
    parse_mla(in, a);
  } else {
    a.num_kv_heads = in.integer("num_kv_heads", Range::between(1, kMaxDim));
    a.head_dim = in.integer("head_dim", Range::between(1, kMaxDim));
    for (const char* mla_only : {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (in.has(mla_only)) in.fail(mla_only, "only used by \"kind\": \"mla\" (this attention is \"gqa\")");
    }
  }
  a.qk_norm = in.boolean_or("qk_norm", false);
  if (in.has("qk_norm_scope") && !a.qk_norm)
    in.fail("qk_norm_scope", "only used with \"qk_norm\": true (this attention has no QK-norm)");
  a.qk_norm_scope = in.choice_of("qk_norm_scope", kQkNormScopeNames, QkNormScope::projection);
  a.bias = enum_or(in, "bias", kAttentionBiasNames, AttentionBias::none);
  a.window_pattern = in.integer_list_or("window_pattern", Range::between(-1, 1 << 24));
  a.sinks = in.boolean_or("sinks", false);
  in.finish();
  for (std::size_t i = 0; i < a.window_pattern.size(); ++i) {
    if (a.window_pattern[i] == 0) {
      throw InputError(in.file(), in.child_path("window_pattern") + "[" + std::to_string(i) + "]",
                       "a window of 0 keys attends to nothing; allowed: a window of 1.." +
                           std::to_string(sequence_length) + " keys, or -1 for full causal attention");
    }
  }
  if (a.kind == AttentionKind::gqa && a.num_heads % a.num_kv_heads != 0) {
    in.fail("num_kv_heads", "num_heads (" + std::to_string(a.num_heads) + ") must be a multiple of num_kv_heads (" +
                                std::to_string(a.num_kv_heads) + ") for grouped-query attention");
  }
  return a;
}

MlpSpec parse_mlp(const JsonReader& in) {
  MlpSpec m;
  m.activation = enum_or(in, "activation", kMlpActivationNames, MlpActivation::swiglu);
  m.bias = in.boolean_or("bias", false);
  in.finish();
  return m;
}

DropoutSpec parse_dropout(const JsonReader& in) {
  DropoutSpec d;
  for (auto [key, p] : {std::pair{"attention", &d.attention}, std::pair{"hidden", &d.hidden}}) {
    *p = in.number_or(key, 0.0, Range::between(0, 1));
    if (*p == 1) in.fail(key, "a dropout of 1 drops every element; allowed: 0 <= p < 1");
  }
  in.finish();
  return d;
}

MoeSpec parse_moe(const JsonReader& in) {
  MoeSpec m;
  m.num_experts = in.integer("num_experts", Range::between(1, kMaxExperts));
  m.top_k = in.integer("top_k", Range::between(1, kMaxExperts));
  m.expert_hidden = in.integer("expert_hidden", Range::between(1, kMaxDim));
  m.shared_experts = in.integer_or("shared_experts", 0, Range::between(0, 64));
  m.shared_hidden =
      in.integer_or("shared_hidden", m.shared_experts > 0 ? m.expert_hidden : 0, Range::between(0, kMaxDim));
  m.router = enum_or(in, "router", kRouterScoreNames, RouterScore::softmax);
  m.router_bias = in.boolean_or("router_bias", false);
  m.expert_groups = in.integer_or("expert_groups", 0, Range::between(0, kMaxExperts));
  m.groups_per_token = in.integer_or("groups_per_token", 0, Range::between(0, kMaxExperts));
  in.finish();
  if (m.top_k > m.num_experts) {
    in.fail("top_k", "top_k " + std::to_string(m.top_k) + " exceeds num_experts " + std::to_string(m.num_experts) +
                         "; allowed: 1..num_experts");
  }
  if (m.shared_experts > 0 && m.shared_hidden == 0) {
    in.fail("shared_hidden", "must be >= 1 when shared_experts > 0");
  }
  if ((m.expert_groups > 0) != (m.groups_per_token > 0)) {
    in.fail(m.expert_groups > 0 ? "groups_per_token" : "expert_groups",
            "group-limited routing needs both expert_groups and groups_per_token (>= 1)");
  }
  if (m.expert_groups > 0 && (m.num_experts % m.expert_groups != 0 || m.groups_per_token > m.expert_groups)) {
    in.fail("groups_per_token", "expert_groups must divide num_experts (" + std::to_string(m.num_experts) +
                                    ") and groups_per_token be at most expert_groups (" +
                                    std::to_string(m.expert_groups) + ")");
  }
  return m;
}

MambaSpec parse_mamba(const JsonReader& in) {
  MambaSpec m;
  m.num_heads = in.integer("num_heads", Range::between(1, kMaxDim));
  m.head_dim = in.integer("head_dim", Range::between(1, kMaxDim));
  m.state_dim = in.integer("state_dim", Range::between(1, kMaxDim));
  m.groups = in.integer_or("groups", 1, Range::between(1, kMaxDim));
  m.conv_kernel = in.integer_or("conv_kernel", 4, Range::between(1, 64));
  m.chunk_size = in.integer_or("chunk_size", 256, Range::between(1, 1 << 16));
  in.finish();
  if (m.num_heads % m.groups != 0) {
    in.fail("groups", "groups (" + std::to_string(m.groups) + ") must divide num_heads (" +
                          std::to_string(m.num_heads) + "): each group's B and C serve whole heads");
  }
  return m;
}

void check_pattern(const JsonReader& in, const Architecture& a) {
  const std::string& p = a.layer_pattern;
  if (static_cast<std::int64_t>(p.size()) != a.num_layers) {
    in.fail("layer_pattern", "has " + std::to_string(p.size()) + " characters but num_layers is " +
                                 std::to_string(a.num_layers) + " (one character per layer)");
  }
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c != kMambaLayer && c != kAttentionLayer && c != kMlpLayer && c != kMoeLayer) {
      in.fail("layer_pattern", "character " + std::to_string(i) + " is '" + std::string(1, c) +
                                   "'; allowed: M (Mamba-2), * (attention), - (MLP), E (MoE)");
    }
  }
  if (p.find(kMambaLayer) != std::string::npos && !a.mamba)
    in.fail("mamba", "required: layer_pattern has Mamba-2 layers (M)");
  if (p.find(kMoeLayer) != std::string::npos && !a.moe) in.fail("moe", "required: layer_pattern has MoE layers (E)");
  if (!a.dense_layers.empty()) in.fail("dense_layers", "not used with layer_pattern (its '-' and 'E' say it)");
}
}  // namespace

Architecture parse_architecture(const JsonReader& in) {
  Architecture a;
  a.name = in.string_or("name", "unnamed");
  in.string_or("description", "");
  a.num_layers = in.integer("num_layers", Range::between(1, kMaxLayers));
  a.d_model = in.integer("d_model", Range::between(1, kMaxDim));
  a.vocab_size = in.integer("vocab_size", Range::between(1, 1 << 24));
  a.sequence_length = in.integer("sequence_length", Range::between(1, 1 << 24));
  a.tie_embeddings = in.boolean_or("tie_embeddings", false);
  a.norm = enum_or(in, "norm", kNormKindNames, NormKind::rmsnorm);
  a.norm_bias = in.boolean_or("norm_bias", false);
  a.position = enum_or(in, "position", kPositionKindNames, PositionKind::rope);
  a.max_positions = in.integer_or("max_positions", a.sequence_length, Range::between(1, 1 << 24));
  a.attention = parse_attention(in.object("attention"), a.sequence_length);
  if (auto mlp = in.optional_object("mlp")) a.mlp = parse_mlp(*mlp);
  if (auto dropout = in.optional_object("dropout")) a.dropout = parse_dropout(*dropout);
  a.dense_hidden = in.integer_or("dense_hidden", 0, Range::between(0, kMaxDim));
  if (auto moe = in.optional_object("moe")) a.moe = parse_moe(*moe);
  a.dense_layers = in.integer_list_or("dense_layers", Range::between(0, kMaxLayers - 1));
  if (auto mamba = in.optional_object("mamba")) a.mamba = parse_mamba(*mamba);
  a.layer_pattern = in.string_or("layer_pattern", "");
  if (auto mtp = in.optional_object("mtp")) {
    a.mtp_layers = mtp->integer("num_layers", Range::between(1, kMaxMtp));
    mtp->finish();
  }
  in.finish();

  if (a.norm_bias && a.norm != NormKind::layernorm) in.fail("norm_bias", "only a \"layernorm\" has a bias");
  if (a.position != PositionKind::learned && in.has("max_positions"))
    in.fail("max_positions", "only a \"learned\" position table has rows");
  if (a.max_positions < a.sequence_length && a.position == PositionKind::learned) {
    in.fail("max_positions", "the learned table has " + std::to_string(a.max_positions) + " rows, fewer than the " +
                                 std::to_string(a.sequence_length) + "-token sequences");
  }
  for (std::size_t i = 0; i < a.dense_layers.size(); ++i) {
    if (a.dense_layers[i] >= a.num_layers) {
      throw InputError(in.file(), in.child_path("dense_layers") + "[" + std::to_string(i) + "]",
                       "layer " + std::to_string(a.dense_layers[i]) + " does not exist; allowed: 0.." +
                           std::to_string(a.num_layers - 1));
    }
  }
  if (!a.layer_pattern.empty()) {
    check_pattern(in, a);
  } else {
    if (!a.moe && !a.dense_layers.empty())
      in.fail("dense_layers", "only meaningful with a \"moe\" section (without it every layer is dense)");
    if (a.mamba) in.fail("mamba", "Mamba-2 layers are placed by a layer_pattern (M); none is given");
  }
  if (a.has_ffn(Ffn::dense) && a.dense_hidden == 0) {
    in.fail("dense_hidden", "required (>= 1): the architecture has dense MLP layers");
  }
  if (a.mtp_layers > 0 && a.layer(a.num_layers - 1).mixer != Mixer::attention)
    in.fail("mtp", "a multi-token prediction module copies the last layer, which must be an attention layer");
  return a;
}

}  // namespace moesim
