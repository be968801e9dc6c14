// A decoder-only transformer (dense or MoE) as the user describes it in an architecture file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moesim {

class JsonReader;

struct AttentionSpec {
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;  // GQA: num_heads % num_kv_heads == 0
  std::int64_t head_dim = 0;
  bool qk_norm = false;  // RMSNorm on the q and k projections (OLMo 2 / Olmo-core)
  bool operator==(const AttentionSpec&) const = default;
};

struct MoeSpec {
  std::int64_t num_experts = 0;    // routed experts N
  std::int64_t top_k = 0;          // K routed experts per token
  std::int64_t expert_hidden = 0;  // h_e, SwiGLU hidden width of one routed expert
  std::int64_t shared_experts = 0;
  std::int64_t shared_hidden = 0;  // hidden width of one shared expert
  bool operator==(const MoeSpec&) const = default;
};

struct Architecture {
  std::string name;
  std::int64_t num_layers = 0;
  std::int64_t d_model = 0;
  std::int64_t vocab_size = 0;
  std::int64_t sequence_length = 0;  // training context length S
  bool tie_embeddings = false;
  AttentionSpec attention;
  std::int64_t dense_hidden = 0;           // SwiGLU hidden width of dense MLP layers
  std::optional<MoeSpec> moe;              // absent: every layer is dense
  std::vector<std::int64_t> dense_layers;  // with moe: layers that keep a dense MLP

  std::int64_t attn_dim() const { return attention.num_heads * attention.head_dim; }
  std::int64_t kv_dim() const { return attention.num_kv_heads * attention.head_dim; }
  bool is_moe_layer(std::int64_t layer) const;
  std::int64_t moe_layer_count() const;
  bool operator==(const Architecture&) const = default;
};

// Parses and validates one architecture object (strict: unknown keys are errors).
Architecture parse_architecture(const JsonReader& in);

}  // namespace moesim
