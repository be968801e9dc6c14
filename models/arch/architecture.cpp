#include "models/arch/architecture.hpp"

#include <algorithm>

#include "models/common/json_reader.hpp"

namespace moesim {

bool Architecture::is_moe_layer(std::int64_t layer) const {
  if (!moe) return false;
  return std::find(dense_layers.begin(), dense_layers.end(), layer) == dense_layers.end();
}

std::int64_t Architecture::moe_layer_count() const {
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < num_layers; ++l) n += is_moe_layer(l) ? 1 : 0;
  return n;
}

namespace {
// Upper bounds keep every count exact in a double and products inside int64.
constexpr double kMaxDim = 1 << 20;
constexpr double kMaxLayers = 4096;
constexpr double kMaxExperts = 65536;

AttentionSpec parse_attention(const JsonReader& in) {
  AttentionSpec a;
  a.num_heads = in.integer("num_heads", Range::between(1, kMaxDim));
  a.num_kv_heads = in.integer("num_kv_heads", Range::between(1, kMaxDim));
  a.head_dim = in.integer("head_dim", Range::between(1, kMaxDim));
  a.qk_norm = in.boolean_or("qk_norm", false);
  in.finish();
  if (a.num_heads % a.num_kv_heads != 0) {
    in.fail("num_kv_heads", "num_heads (" + std::to_string(a.num_heads) + ") must be a multiple of num_kv_heads (" +
                                std::to_string(a.num_kv_heads) + ") for grouped-query attention");
  }
  return a;
}

MoeSpec parse_moe(const JsonReader& in) {
  MoeSpec m;
  m.num_experts = in.integer("num_experts", Range::between(1, kMaxExperts));
  m.top_k = in.integer("top_k", Range::between(1, kMaxExperts));
  m.expert_hidden = in.integer("expert_hidden", Range::between(1, kMaxDim));
  m.shared_experts = in.integer_or("shared_experts", 0, Range::between(0, 64));
  m.shared_hidden =
      in.integer_or("shared_hidden", m.shared_experts > 0 ? m.expert_hidden : 0, Range::between(0, kMaxDim));
  in.finish();
  if (m.top_k > m.num_experts) {
    in.fail("top_k", "top_k " + std::to_string(m.top_k) + " exceeds num_experts " + std::to_string(m.num_experts) +
                         "; allowed: 1..num_experts");
  }
  if (m.shared_experts > 0 && m.shared_hidden == 0) {
    in.fail("shared_hidden", "must be >= 1 when shared_experts > 0");
  }
  return m;
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
  a.attention = parse_attention(in.object("attention"));
  a.dense_hidden = in.integer_or("dense_hidden", 0, Range::between(0, kMaxDim));
  if (auto moe = in.optional_object("moe")) a.moe = parse_moe(*moe);
  a.dense_layers = in.integer_list_or("dense_layers", Range::between(0, kMaxLayers - 1));
  in.finish();

  for (std::size_t i = 0; i < a.dense_layers.size(); ++i) {
    if (a.dense_layers[i] >= a.num_layers) {
      throw InputError(in.file(), in.child_path("dense_layers") + "[" + std::to_string(i) + "]",
                       "layer " + std::to_string(a.dense_layers[i]) + " does not exist; allowed: 0.." +
                           std::to_string(a.num_layers - 1));
    }
  }
  if (!a.moe && !a.dense_layers.empty()) {
    in.fail("dense_layers", "only meaningful with a \"moe\" section (without it every layer is dense)");
  }
  const bool needs_dense = !a.moe || a.moe_layer_count() < a.num_layers;
  if (needs_dense && a.dense_hidden == 0) {
    in.fail("dense_hidden", "required (>= 1): the architecture has dense MLP layers");
  }
  return a;
}

}  // namespace moesim
