// Built-in shapes: the seed's Figure 8 model with 48 routed experts (DESIGN.md, "Domain facts"),
// one rank microbatch of 16384 tokens, DDP buckets with Olmo-core's 250 MiB cap, a coalesced BF16
// all-gather for a replica group of 8 and FSDP2 units of one block each. shapes/fig8-n48.json is
// this function's output (moesim-calibrate --write-default-shapes).
#include <string>
#include <vector>

#include "shapes.hpp"

namespace moesim::cal {
namespace {

struct Param {
    std::string unit;  // FSDP unit holding it
    std::int64_t numel;
};

// Parameters in forward (module) order: the embedding, every block (block_parameters), the final
// norm and the LM head.
std::vector<Param> parameters(const ModelDims& m) {
    std::vector<Param> p;
    p.push_back({"embedding", m.vocab * m.d_model});
    for (std::int64_t l = 0; l < m.layers; ++l) {
        const std::string u = "block" + std::to_string(l);
        for (std::int64_t n : block_parameters(m, l >= m.dense_layers)) p.push_back({u, n});
    }
    p.push_back({"lm_head", m.d_model});            // final norm
    p.push_back({"lm_head", m.vocab * m.d_model});  // untied output projection
    return p;
}

// Olmo-core DDP buckets (DESIGN.md): reverse parameter order, FP32 bytes, a new bucket when the
// cap would be exceeded; a tensor larger than the cap is its own bucket. One replica group (EP off).
std::vector<std::int64_t> buckets(const std::vector<Param>& params, std::int64_t cap) {
    std::vector<std::int64_t> out;
    std::int64_t cur = 0;
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
        const std::int64_t b = it->numel * 4;
        if (b > cap) {
            if (cur) out.push_back(cur);
            out.push_back(b);
            cur = 0;
        } else if (cur + b > cap) {
            out.push_back(cur);
            cur = b;
        } else {
            cur += b;
        }
    }
    if (cur) out.push_back(cur);
    return out;
}

void add_linear(std::vector<GemmShape>& g, const std::string& name, std::int64_t t, std::int64_t out_f,
                std::int64_t in_f, std::int64_t count) {
    g.push_back({name + "_fwd", t, out_f, in_f, Layout::Fwd, count});
    g.push_back({name + "_dgrad", t, in_f, out_f, Layout::Dgrad, count});
    g.push_back({name + "_wgrad", out_f, in_f, t, Layout::Wgrad, count});
}

}  // namespace

Shapes default_shapes() {
    const ModelDims m;
    const auto params = parameters(m);
    const std::int64_t moe_layers = m.layers - m.dense_layers, t = m.tokens;
    const std::int64_t group = 8;
    Shapes s;
    s.name = "fig8-n48";
    s.description =
        "Seed Figure 8 model, 48 routed experts (~19B total, ~3.2B active), one rank microbatch of "
        "16384 tokens; DDP buckets with the 250 MiB FP32 cap, EP off (one replica group); coalesced "
        "BF16 all-gather and FSDP2 units sized for a replica group of 8 (per-tensor sharding: tensors "
        "with numel >= 4096 and numel % 8 == 0). Attention score/value products are not cuBLAS GEMMs "
        "and are not listed.";
    json::Value model = model_dims_to_json(m);
    std::int64_t total = 0;
    for (const auto& p : params) total += p.numel;
    model.set("total_params", total);
    s.model = model;
    s.dims = m;

    const std::int64_t d = m.d_model, qkv = (m.q_heads + 2 * m.kv_heads) * m.head_dim;
    add_linear(s.gemm, "attn_qkv", t, qkv, d, m.layers);
    add_linear(s.gemm, "attn_out", t, d, m.q_heads * m.head_dim, m.layers);
    add_linear(s.gemm, "dense_mlp_up_gate", t, m.dense_mlp_hidden, d, 2 * m.dense_layers);
    add_linear(s.gemm, "dense_mlp_down", t, d, m.dense_mlp_hidden, m.dense_layers);
    add_linear(s.gemm, "shared_expert_up_gate", t, m.shared_expert_hidden, d, 2 * moe_layers);
    add_linear(s.gemm, "shared_expert_down", t, d, m.shared_expert_hidden, moe_layers);
    add_linear(s.gemm, "router", t, m.routed_experts, d, moe_layers);
    add_linear(s.gemm, "lm_head", t, m.vocab, d, 1);

    auto& gg = s.grouped;
    gg.tokens = t;
    gg.experts = m.routed_experts;
    gg.top_k = m.top_k;
    gg.seed = 1234;
    gg.zipf_s = {0.0, 1.0};
    const std::int64_t h2 = 2 * m.expert_hidden, h = m.expert_hidden;
    gg.gemms = {
        {"expert_up_gate_fwd", Layout::Fwd, 0, h2, d, 'm'},     {"expert_down_fwd", Layout::Fwd, 0, d, h, 'm'},
        {"expert_up_gate_dgrad", Layout::Dgrad, 0, d, h2, 'm'}, {"expert_down_dgrad", Layout::Dgrad, 0, h, d, 'm'},
        {"expert_up_gate_wgrad", Layout::Wgrad, h2, d, 0, 'k'}, {"expert_down_wgrad", Layout::Wgrad, d, h, 0, 'k'}};

    s.buckets.cap_bytes = 250LL << 20;
    s.buckets.bucket_bytes = buckets(params, s.buckets.cap_bytes);

    // Per-tensor sharding (Olmo): only sharded tensors take part in the coalesced all-gather.
    s.assumed_group_size = group;
    s.allgather_flat_bytes = 0;
    for (const auto& p : params)
        if (p.numel >= 4096 && p.numel % group == 0) s.allgather_flat_bytes += 2 * p.numel;
    for (const auto& p : params) {
        if (s.fsdp_units.empty() || s.fsdp_units.back().name != p.unit) s.fsdp_units.push_back({p.unit, 0});
        s.fsdp_units.back().bytes += 2 * p.numel;
    }

    s.alltoall.rows_per_rank = t * m.top_k;
    s.alltoall.d = d;
    s.alltoall.experts = m.routed_experts;
    s.alltoall.top_k = m.top_k;
    s.alltoall.seed = 7;
    s.alltoall.zipf_s = {0.0, 1.0};

    s.interference.gemm = {"expert_like_fwd", t, h2, d, Layout::Fwd, 1};
    s.interference.allreduce_bytes = s.buckets.cap_bytes;
    s.interference.alltoall_rows_per_rank = t * m.top_k;
    return s;
}

}  // namespace moesim::cal
