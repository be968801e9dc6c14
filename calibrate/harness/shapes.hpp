// Model shapes that drive the measurements: GEMM shapes, the routed-expert grouped GEMM, the DDP
// bucket layout, the coalesced all-gather and FSDP unit sizes, all-to-all and interference
// settings. Read from a --shapes JSON file (schema moesim-shapes/1, README.md) or built in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"

namespace moesim::cal {

// Operand layouts, in row-major terms with C[m,n]:
//   fwd:   C = X[m,k] * W[n,k]^T   (a linear layer's forward)
//   dgrad: C = X[m,k] * W[k,n]     (input gradient: dY times W)
//   wgrad: C = X[k,m]^T * W[k,n]   (weight gradient: dY^T times X, k = tokens)
enum class Layout { Fwd, Dgrad, Wgrad };
const char* layout_name(Layout l);

struct GemmShape {
    std::string name;
    std::int64_t m = 0, n = 0, k = 0;
    Layout layout = Layout::Fwd;
    std::int64_t count = 1;  // occurrences per microbatch (informational)
};

// One GEMM per expert; the dimension named rows_dim ('m' or 'k') is that expert's routed rows.
struct GroupedGemmShape {
    std::string name;
    Layout layout = Layout::Fwd;
    std::int64_t m = 0, n = 0, k = 0;  // the rows dimension is 0 here
    char rows_dim = 'm';
};

struct GroupedGemmConfig {
    std::int64_t tokens = 0, experts = 0, top_k = 0;
    std::uint64_t seed = 1;
    std::vector<double> zipf_s;  // routing skews to measure; 0 = uniform random routing
    std::vector<GroupedGemmShape> gemms;
};

struct BucketConfig {
    std::int64_t cap_bytes = 0;              // informational: the cap the layout was built with
    std::vector<std::int64_t> bucket_bytes;  // FP32 bytes per bucket, in launch order
};

struct FsdpUnit {
    std::string name;
    std::int64_t bytes = 0;  // BF16 parameter bytes of the whole (unsharded) unit
};

struct AllToAllConfig {
    std::int64_t rows_per_rank = 0;  // routed rows each rank sends (tokens * top_k)
    std::int64_t d = 0;              // row width in BF16 elements (row bytes = 2 d)
    std::int64_t experts = 0, top_k = 0;
    std::vector<double> zipf_s;  // skews of the routed (non-uniform) cases
    std::uint64_t seed = 7;
};

struct InterferenceConfig {
    GemmShape gemm;
    std::int64_t allreduce_bytes = 0;
    std::int64_t alltoall_rows_per_rank = 0;
};

// The model the shapes describe: the typed keys of the shapes file's "model" object, from which
// the sequence group derives its kernels. Keys the file leaves out keep these values (the Figure 8
// model with 48 experts); `defaulted` names them. tokens = "tokens_per_rank_microbatch".
struct ModelDims {
    std::int64_t d_model = 4096, q_heads = 32, kv_heads = 8, head_dim = 128;
    std::int64_t layers = 8, dense_layers = 1, dense_mlp_hidden = 20480;
    std::int64_t routed_experts = 48, expert_hidden = 4096, top_k = 4;
    std::int64_t shared_experts = 1, shared_expert_hidden = 4096;
    std::int64_t vocab = 100352, sequence_length = 8192, tokens = 16384;
    std::vector<std::string> defaulted;
};

// Reads the typed keys of a "model" object (other keys stay free-form); a typed key with a wrong
// type or range is an error naming its path.
ModelDims parse_model_dims(const json::Value& model, const std::string& path);
// The typed keys, in the order of shapes/fig8-n48.json.
json::Value model_dims_to_json(const ModelDims& m);
// Parameter numels of one block in module order (Olmo-core layout, see default_shapes.cpp).
std::vector<std::int64_t> block_parameters(const ModelDims& m, bool moe);

struct Shapes {
    std::string name, description;
    json::Value model;  // model description, copied to the output (typed keys: ModelDims)
    ModelDims dims;     // the typed keys of `model`, with defaults
    std::vector<GemmShape> gemm;
    GroupedGemmConfig grouped;
    BucketConfig buckets;
    std::int64_t allgather_flat_bytes = 0;  // total gathered BF16 bytes (all ranks' shards)
    std::int64_t assumed_group_size = 8;    // group the sizes were derived for (informational)
    std::vector<FsdpUnit> fsdp_units;
    AllToAllConfig alltoall;
    InterferenceConfig interference;
};

// The Figure 8 model with 48 experts (DESIGN.md), one rank microbatch of 16384 tokens.
Shapes default_shapes();

// Reads and strictly validates a shapes file; sections it omits keep the built-in defaults.
Shapes load_shapes(const std::string& path);

json::Value shapes_to_json(const Shapes& s);

}  // namespace moesim::cal
