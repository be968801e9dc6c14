// Kernel sequences of one block (see sequence_plan.hpp). Shapes follow the simulator's
// sim/layer_work.cpp: a linear layer [T,in]x[in,out] is forward gemm(T, out, in), backward dgrad
// gemm(T, in, out) and wgrad gemm(out, in, T); routed experts are grouped GEMMs over the routed
// rows; permute/unpermute are BF16 copies of T*K*d elements; the block's BF16 gradients are
// accumulated into FP32 once per microbatch (DDP).
#include "sequence_plan.hpp"

#include "grouped_ops.hpp"
#include "memory_kernels.hpp"
#include "routing.hpp"

namespace moesim::cal {
namespace {

SeqKernel gemm(const std::string& name, const std::string& phase, GemmDims d) {
    SeqKernel k;
    k.name = name;
    k.phase = phase;
    k.dims = d;
    k.flops = d.flops();
    return k;
}

void linear_fwd(SeqPlan& p, const std::string& name, std::int64_t in, std::int64_t out) {
    p.kernels.push_back(gemm(name + "_fwd", "forward", {p.tokens, out, in, Layout::Fwd}));
}

void linear_bwd(SeqPlan& p, const std::string& name, std::int64_t in, std::int64_t out) {
    p.kernels.push_back(gemm(name + "_dgrad", "backward", {p.tokens, in, out, Layout::Dgrad}));
    p.kernels.push_back(gemm(name + "_wgrad", "backward", {out, in, p.tokens, Layout::Wgrad}));
}

void grouped(SeqPlan& p, const std::string& phase, GroupedGemmShape s) {
    SeqKernel k;
    k.name = s.name;
    k.phase = phase;
    k.op = SeqOp::Grouped;
    k.grouped = s;
    for (std::int64_t r : p.rows)
        if (r > 0) k.flops += GemmDims{s.rows_dim == 'm' ? r : s.m, s.n, s.rows_dim == 'k' ? r : s.k, s.layout}.flops();
    p.kernels.push_back(k);
}

void memory(SeqPlan& p, const std::string& name, const std::string& phase, SeqOp op, std::int64_t elements) {
    SeqKernel k;
    k.name = name;
    k.phase = phase;
    k.op = op;
    k.elements = elements;
    k.bytes = static_cast<double>(elements) * (op == SeqOp::Copy ? 4.0 : kGradAccumBytesPerElement);
    p.kernels.push_back(k);
}

std::string shared_name(const ModelDims& m, std::int64_t i) {
    return m.shared_experts > 1 ? "shared_expert" + std::to_string(i) : "shared_expert";
}

SeqPlan block_plan(const Shapes& s, bool moe) {
    const ModelDims& m = s.dims;
    SeqPlan p;
    p.block = moe ? "moe" : "dense";
    p.example_layer = moe ? m.dense_layers : 0;
    p.layers_of_kind = moe ? m.layers - m.dense_layers : m.dense_layers;
    p.tokens = m.tokens;
    for (std::int64_t n : block_parameters(m, moe)) p.params += n;
    const std::int64_t d = m.d_model, q = m.q_heads * m.head_dim, qkv = q + 2 * m.kv_heads * m.head_dim;
    const std::int64_t h = m.dense_mlp_hidden, he = m.expert_hidden, hs = m.shared_expert_hidden;
    const std::int64_t routed = m.tokens * m.top_k;
    if (moe) {
        p.zipf_s = s.grouped.zipf_s.empty() ? 0.0 : s.grouped.zipf_s.front();
        p.seed = s.grouped.seed;
        p.rows = route_rows(m.tokens, m.routed_experts, m.top_k, p.zipf_s, p.seed, p.seed + 1);
    }
    // Forward: attention block (scores excluded), then the MLP or the MoE feed-forward.
    linear_fwd(p, "attn_qkv", d, qkv);
    linear_fwd(p, "attn_out", q, d);
    if (!moe) {
        linear_fwd(p, "dense_mlp_up_gate", d, 2 * h);
        linear_fwd(p, "dense_mlp_down", h, d);
    } else {
        linear_fwd(p, "router", d, m.routed_experts);
        memory(p, "permute_copy", "forward", SeqOp::Copy, routed * d);
        grouped(p, "forward", {"expert_up_gate_fwd", Layout::Fwd, 0, 2 * he, d, 'm'});
        grouped(p, "forward", {"expert_down_fwd", Layout::Fwd, 0, d, he, 'm'});
        memory(p, "unpermute_copy", "forward", SeqOp::Copy, routed * d);
        for (std::int64_t i = 0; i < m.shared_experts; ++i) {
            linear_fwd(p, shared_name(m, i) + "_up_gate", d, 2 * hs);
            linear_fwd(p, shared_name(m, i) + "_down", hs, d);
        }
    }
    // Backward, in reverse order.
    if (!moe) {
        linear_bwd(p, "dense_mlp_down", h, d);
        linear_bwd(p, "dense_mlp_up_gate", d, 2 * h);
    } else {
        for (std::int64_t i = m.shared_experts - 1; i >= 0; --i) {
            linear_bwd(p, shared_name(m, i) + "_down", hs, d);
            linear_bwd(p, shared_name(m, i) + "_up_gate", d, 2 * hs);
        }
        memory(p, "unpermute_bwd_copy", "backward", SeqOp::Copy, routed * d);
        grouped(p, "backward", {"expert_down_dgrad", Layout::Dgrad, 0, he, d, 'm'});
        grouped(p, "backward", {"expert_down_wgrad", Layout::Wgrad, d, he, 0, 'k'});
        grouped(p, "backward", {"expert_up_gate_dgrad", Layout::Dgrad, 0, d, 2 * he, 'm'});
        grouped(p, "backward", {"expert_up_gate_wgrad", Layout::Wgrad, 2 * he, d, 0, 'k'});
        memory(p, "permute_bwd_copy", "backward", SeqOp::Copy, routed * d);
        linear_bwd(p, "router", d, m.routed_experts);
    }
    linear_bwd(p, "attn_out", q, d);
    linear_bwd(p, "attn_qkv", d, qkv);
    memory(p, "grad_accum_bf16_to_fp32", "grad_accumulate", SeqOp::GradAccum, p.params);
    return p;
}

}  // namespace

const char* seq_op_name(SeqOp op) {
    switch (op) {
        case SeqOp::Gemm: return "gemm";
        case SeqOp::Grouped: return "grouped_gemm";
        case SeqOp::Copy: return "memcpy_d2d";
        case SeqOp::GradAccum: return "grad_accum_bf16_to_fp32";
    }
    return "?";
}

std::vector<SeqPlan> sequence_plans(const Shapes& s) {
    std::vector<SeqPlan> plans;
    if (s.dims.layers > s.dims.dense_layers) plans.push_back(block_plan(s, true));
    if (s.dims.dense_layers > 0) plans.push_back(block_plan(s, false));
    return plans;
}

std::int64_t plan_bytes(const SeqPlan& p) {
    std::int64_t b = 0;
    for (const auto& k : p.kernels) {
        switch (k.op) {
            case SeqOp::Gemm: b += GemmOperands::bytes_for(k.dims); break;
            case SeqOp::Grouped: b += grouped_bytes(k.grouped, p.rows); break;
            case SeqOp::Copy: b += 4 * k.elements; break;       // BF16 source and destination
            case SeqOp::GradAccum: b += 6 * k.elements; break;  // FP32 accumulator, BF16 gradient
        }
    }
    return b;
}

json::Value kernel_json(const SeqKernel& k) {
    json::Value o = json::Value::object();
    o.set("name", k.name);
    o.set("phase", k.phase);
    o.set("op", seq_op_name(k.op));
    if (k.op == SeqOp::Gemm) {
        o.set("m", k.dims.m);
        o.set("n", k.dims.n);
        o.set("k", k.dims.k);
        o.set("layout", layout_name(k.dims.layout));
    } else if (k.op == SeqOp::Grouped) {
        const auto& s = k.grouped;
        o.set("m", s.rows_dim == 'm' ? json::Value("rows") : json::Value(s.m));
        o.set("n", s.n);
        o.set("k", s.rows_dim == 'k' ? json::Value("rows") : json::Value(s.k));
        o.set("layout", layout_name(s.layout));
        o.set("rows_dim", std::string(1, s.rows_dim));
    } else {
        o.set("dtype", k.op == SeqOp::Copy ? "bf16" : "bf16->fp32");
        o.set("elements", k.elements);
        o.set("bytes", k.bytes);
    }
    if (k.flops > 0) o.set("flops", k.flops);
    return o;
}

json::Value sequence_includes(const SeqPlan& p) {
    json::Value a = json::Value::array();
    a.push_back("attention-block GEMMs: QKV and out-projection, forward, dgrad and wgrad (cuBLASLt)");
    if (p.block == "dense") {
        a.push_back("dense-MLP GEMMs: up/gate and down, forward, dgrad and wgrad");
    } else {
        a.push_back("router GEMM forward, dgrad and wgrad");
        a.push_back(
            "routed-expert grouped GEMMs (up/gate, down) forward, dgrad and wgrad over the seeded top-K routing's rows "
            "per expert");
        a.push_back("shared-expert GEMMs forward, dgrad and wgrad, on the same stream");
        a.push_back(
            "permute and unpermute, forward and backward: each one BF16 copy of tokens*top_k*d_model elements "
            "(cudaMemcpyAsync)");
    }
    a.push_back("BF16->FP32 gradient accumulation over the block's parameters (DDP, every microbatch)");
    return a;
}

json::Value sequence_excludes(const SeqPlan& p) {
    json::Value a = json::Value::array();
    a.push_back("attention kernels not included: flash-attention (scores, softmax, values) has no cuBLAS stand-in");
    a.push_back("elementwise kernels: norms, RoPE, QK-norm, SwiGLU, residual adds" +
                std::string(p.block == "moe" ? ", router softmax/top-K, combine weighting" : ""));
    a.push_back("selective recompute in backward");
    a.push_back("communication: expert all-to-all, gradient all-reduce/reduce-scatter, FSDP all-gather");
    a.push_back("optimizer step");
    if (p.block == "moe") {
        a.push_back("side-stream overlap: the shared expert runs on the main stream, serialised");
        a.push_back("expert parallelism: every routed expert is local (EP off)");
    }
    return a;
}

}  // namespace moesim::cal
