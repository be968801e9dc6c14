// The model description (shapes.hpp ModelDims): the typed keys of the shapes file's "model"
// object, read strictly and written back in the order of shapes/fig8-n48.json (other keys of
// "model" stay free-form), and the parameter layout of one block.
#include <string>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "shapes.hpp"

namespace moesim::cal {
namespace {

struct Key {
    const char* name;
    std::int64_t ModelDims::*field;
    std::int64_t min;
};

// Every typed key with its lower bound; the order is the written order.
const std::vector<Key>& keys() {
    static const std::vector<Key> k = {
        {"d_model", &ModelDims::d_model, 1},
        {"q_heads", &ModelDims::q_heads, 1},
        {"kv_heads", &ModelDims::kv_heads, 1},
        {"head_dim", &ModelDims::head_dim, 1},
        {"layers", &ModelDims::layers, 1},
        {"dense_layers", &ModelDims::dense_layers, 0},
        {"dense_mlp_hidden", &ModelDims::dense_mlp_hidden, 1},
        {"routed_experts", &ModelDims::routed_experts, 1},
        {"expert_hidden", &ModelDims::expert_hidden, 1},
        {"top_k", &ModelDims::top_k, 1},
        {"shared_experts", &ModelDims::shared_experts, 0},
        {"shared_expert_hidden", &ModelDims::shared_expert_hidden, 1},
        {"vocab", &ModelDims::vocab, 1},
        {"sequence_length", &ModelDims::sequence_length, 1},
        {"tokens_per_rank_microbatch", &ModelDims::tokens, 1},
    };
    return k;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw HarnessError("shapes: " + path + " " + what);
}

}  // namespace

ModelDims parse_model_dims(const json::Value& model, const std::string& path) {
    if (!model.is_object()) fail(path, "must be an object");
    ModelDims m;
    for (const Key& k : keys()) {
        const json::Value* v = model.find(k.name);
        if (!v) {
            m.defaulted.emplace_back(k.name);
            continue;
        }
        if (!v->is_int() || v->as_int() < k.min)
            fail(path + "." + k.name, "must be an integer >= " + std::to_string(k.min));
        m.*(k.field) = v->as_int();
    }
    if (m.top_k > m.routed_experts) fail(path + ".top_k", "must not exceed routed_experts");
    if (m.dense_layers > m.layers) fail(path + ".dense_layers", "must not exceed layers");
    return m;
}

// Olmo-core's block layout: attention (w_q, w_k, w_v, q_norm, k_norm, w_out), attention norm,
// feed-forward (dense w1, w2, w3, or router, stacked experts [N,2h,d] up/gate and [N,d,h] down,
// each shared expert's w1, w2, w3), feed-forward norm.
std::vector<std::int64_t> block_parameters(const ModelDims& m, bool moe) {
    const std::int64_t d = m.d_model, attn = m.q_heads * m.head_dim, kv = m.kv_heads * m.head_dim;
    std::vector<std::int64_t> p = {attn * d, kv * d, kv * d, attn, kv, d * attn, d};
    if (!moe) {
        for (int i = 0; i < 3; ++i) p.push_back(m.dense_mlp_hidden * d);
    } else {
        p.push_back(m.routed_experts * d);                        // router
        p.push_back(m.routed_experts * 2 * m.expert_hidden * d);  // experts up/gate
        p.push_back(m.routed_experts * d * m.expert_hidden);      // experts down
        for (std::int64_t s = 0; s < m.shared_experts; ++s)
            for (int i = 0; i < 3; ++i) p.push_back(m.shared_expert_hidden * d);
    }
    p.push_back(d);  // feed-forward norm
    return p;
}

json::Value model_dims_to_json(const ModelDims& m) {
    json::Value o = json::Value::object();
    for (const Key& k : keys()) o.set(k.name, m.*(k.field));
    return o;
}

}  // namespace moesim::cal
