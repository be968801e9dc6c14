// The kernel sequence of one microbatch through one block (MoE, and dense when the model has a
// dense layer), forward then backward, derived from the shapes file's model description
// (Shapes::dims). Host-only: what to run, in order; sequence.cpp allocates, runs and times it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "json.hpp"
#include "shapes.hpp"

namespace moesim::cal {

enum class SeqOp { Gemm, Grouped, Copy, GradAccum };
const char* seq_op_name(SeqOp op);

struct SeqKernel {
    std::string name;   // attn_qkv_fwd, expert_down_wgrad, permute_copy, ...
    std::string phase;  // forward, backward, grad_accumulate (the simulator's phase names)
    SeqOp op = SeqOp::Gemm;
    GemmDims dims;              // Gemm
    GroupedGemmShape grouped;   // Grouped: rows per expert from SeqPlan::rows
    std::int64_t elements = 0;  // Copy: BF16 elements; GradAccum: parameters
    double flops = 0;           // GEMMs: 2mnk (summed over experts)
    double bytes = 0;           // memory kernels: bytes read + written
};

struct SeqPlan {
    std::string block;               // "moe" or "dense"
    std::int64_t example_layer = 0;  // first layer of this kind (the simulator's layer index)
    std::int64_t layers_of_kind = 0;
    std::int64_t tokens = 0;
    // Routing of the MoE block: seeded top-K over all routed experts (expert parallelism off).
    std::vector<std::int64_t> rows;
    double zipf_s = 0;
    std::uint64_t seed = 0;
    std::int64_t params = 0;  // the block's parameters (gradient accumulation)
    std::vector<SeqKernel> kernels;
};

// The MoE block (when the model has MoE layers) then the dense block (when it has dense layers).
std::vector<SeqPlan> sequence_plans(const Shapes& s);

// Device bytes the plan's buffers take (one operand set per kernel).
std::int64_t plan_bytes(const SeqPlan& p);

// The kernel's description (name, phase, op and its shape) for the record.
json::Value kernel_json(const SeqKernel& k);

// What the sequence includes and leaves out, for the record's "includes"/"excludes".
json::Value sequence_includes(const SeqPlan& p);
json::Value sequence_excludes(const SeqPlan& p);

}  // namespace moesim::cal
