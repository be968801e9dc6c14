// Kernel times of one microbatch through each part of a block on one rank, priced by a cost book.
// Computed once per (layer kind, rank load) and reused for every microbatch of the replay.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/costs/cost_book.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct PassTimes {  // one part of a block, compute-stream time of each direction
  double fwd = 0;
  double bwd = 0;    // the whole backward: input gradients (B) and weight gradients (W)
  double wgrad = 0;  // W, the part of bwd the zero-bubble schedules defer: the GEMMs' wgrads only
  // B: everything else in bwd (dgrads, attention and memory-bound backward, quantization).
  double input_grad() const { return bwd - wgrad; }
};

PassTimes add(PassTimes a, PassTimes b);

// The GEMM format of a class of linears and whether its weights are cached quantized.
struct Format {
  GemmPrecision gemm = GemmPrecision::bf16;
  bool weight_caches = false;
  bool input_quantized = false;  // X arrives cast along K (FP8 EP dispatch)
};
// The plan's format for a class of linears.
Format format_of(const ParallelPlan& plan, LinearClass c);

// A memory-bound kernel of class `kind`: forward moves `bytes`; backward reads the saved input and
// the incoming gradient and writes the outgoing one, about twice the traffic.
PassTimes streaming(const CostBook& c, double bytes, MemoryKernel kind);

// Flash attention over the microbatch's sequences on this rank's `heads` and `kv_heads` (all of
// them, or a TP shard): causal, over the layer's sliding window where it has one; MLA's q/k and v
// head widths apart.
PassTimes flash_attention(const Architecture& a, const CostBook& c, double tokens, double heads, double kv_heads,
                          double window);

// Megatron-LM's unfused core attention (megatron/core/transformer/dot_product_attention.py
// DotProductAttention.forward) over the microbatch's sequences on this rank's `heads`: per
// sequence and head, baddbmm writes the S x S scores (every pair: the causal mask is applied to
// the whole matrix), the fused scale-mask-softmax reads them and writes the probabilities,
// dropout (where it drops) reads them and writes its output and a one-byte mask, and bmm reads
// them with V. Backward: the four bmm gradients, the dropout's (read the gradient and the mask,
// write) and the softmax's (read the probabilities and the gradient, write). Each bmm is priced
// as one head's GEMM times the heads; at head widths of 64-256 the score matrix's HBM traffic
// sets that GEMM's time (the GEMM model's roofline floor).
PassTimes unfused_attention(const Architecture& a, const CostBook& c, double tokens, double heads, double e);

// PyTorch's eager pointwise ops (plan kernels.pointwise "eager" outside a compiled block), priced
// as the bytes they move beyond the fused pass a block's elementwise op already holds (2e an
// element forward, priced 4e backward; e the compute dtype's bytes).
// RoPE on `elements` of q and k, torchtitan's ComplexRoPE.apply_rotary_emb (models/common/rope.py):
// the FP32 upcast (read e, write 4), the complex multiply (read 4, write 4), the cast back (read 4,
// write e): 2e + 16 bytes an element, and as many backward (the adjoint casts and the conjugate
// multiply).
PassTimes eager_rope_extra(const CostBook& c, double elements, double e);
// A gated activation on `elements` of its product, torchtitan's FeedForward and GroupedExperts
// (F.silu(w1 x) * w3 x): silu (read e, write e), then the product (read 2e, write e): 5e against
// the fused pass's 3e; backward, the product's two gradients (read 2e, write e each) and silu's
// (read 2e, write e): 9e against 6e.
PassTimes eager_gated_activation_extra(const CostBook& c, double elements, double e);

// The quantization kernels a low-precision linear [rows, in] x [in, out] runs around its GEMMs
// (models/costs/low_precision.hpp), priced as elementwise-class memory kernels; zero for BF16.
PassTimes quantization(const CostBook& c, Format f, double rows, double in, double out, double weight_elements);
// Forward GEMM [T, in] x [in, out] and its backward pair: dgrad [T, out] x [out, in] and
// wgrad [out, T] x [T, in] (same FLOPs each, each at its own pass's rate; the wgrad also in
// `wgrad`), in format f, with its quantization kernels (in B: they feed both GEMMs).
PassTimes linear(const CostBook& c, Format f, double tokens, double in, double out);
// The routed experts' grouped GEMM [rows, k] x [k, n] per expert, forward and backward (dgrad +
// wgrad, the same FLOPs each), with its quantization kernels. The profile's efficiencies are keyed
// by rows per expert in every pass, so the rows stay the first dimension. Uncached weights are
// cast for every expert in `rows`.
PassTimes grouped(const CostBook& c, Format f, const std::vector<double>& rows, double n, double k);

// The points between a block's parts before the EP dispatch where communication sits: where a
// tensor-parallel region opens or closes (Megatron-LM's f and g operators, Shoeybi et al. 2019
// Section 3; with sequence parallelism Korthikanti et al. 2022 Section 4.2.2), and around the
// attention core under context parallelism.
enum class LayerPoint : std::uint8_t {
  tp_enter,          // SP: all-gather forward, reduce-scatter backward; without SP: nothing, all-reduce
  tp_exit,           // SP: reduce-scatter forward, all-gather backward; without SP: all-reduce, nothing
  cp_begin,          // ring: the K/V passes start beside the attention; all-to-all: q, k, v to head shards
  cp_end,            // ring: the attention waits for the last pass; all-to-all: the output back
  seam,              // nothing: a task boundary (TP communication overlap runs a collective beside one GEMM)
  qk_norm_exchange,  // all-to-all over TP both ways: q and k between head and sequence shards
};
// The collective a TP point runs in one direction (`has` false: none).
struct TpCollective {
  bool has = false;
  CollectiveKind kind = CollectiveKind::all_reduce;
};
TpCollective tp_collective(LayerPoint point, bool backward, bool sequence_parallel);

// A block as the step runs it: its ops (layer_ops.hpp) summed into the segments between the EP
// all-to-alls.
struct LayerWork {
  bool moe = false;
  PassTimes pre;  // attention block (+ dense MLP, or + norm/router/permute before dispatch)
  // `pre` cut at the TP points: part i runs, then the collective of `pre_points[i]`; one part
  // (no point) without TP.
  std::vector<PassTimes> pre_parts;
  std::vector<LayerPoint> pre_points;
  std::vector<std::uint8_t> pre_first;  // each part's first op (a LayerOpKind: its trace label)
  bool shared_tp = false;               // the side ops sit between a TP enter and exit of their own
  double tp_bytes = 0;                  // what each TP collective moves (nccl-tests convention: [T, d] activations)
  // Context parallelism: the attention core's times (what a ring's passes hide behind), the K and
  // V chunk one ring step passes on (the backward passes their gradients too), and the
  // all-to-all variant's exchanges of q, k, v before and of the output after the attention.
  PassTimes attention;
  double cp_ring_bytes = 0;
  double cp_qkv_bytes = 0;
  double cp_out_bytes = 0;
  double qk_norm_bytes = 0;   // each qk_norm_exchange's all-to-all (q and k of the rank's heads, all tokens)
  double etp_bytes = 0;       // expert TP's gather and scatter of the rank's routed rows
  PassTimes experts;          // routed-expert grouped GEMMs on this rank's rows
  PassTimes post;             // unpermute / combine weighting / residual
  PassTimes shared;           // shared experts (side stream)
  double a2a_bytes = 0;       // all_to_all send buffer per rank: combine (= BF16 dispatch, every backward)
  double dispatch_bytes = 0;  // the forward dispatch's (smaller when precision.ep_dispatch is FP8)
  // Kernels the plan's partial recompute adds to the block's backward: the SwiGLU products
  // (selective), or what torchtitan's op-level checkpointing does not keep (selective_op: the k and
  // out projections, w3 and every memory-bound kernel of the forward); zero otherwise.
  double partial_recompute = 0;
  // The block's W pass under a zero-bubble schedule: every weight gradient, run as one kernel.
  double weight_gradients() const { return pre.wgrad + experts.wgrad + post.wgrad + shared.wgrad; }
};

// Embedding (first stage) and final norm + LM head + loss (last stage). The embedding lookup and
// its gradient scatter are pure HBM traffic (memory-bound kernels).
struct EdgeWork {
  PassTimes embed;
  PassTimes head;
};

// `rank_rows`: routed rows per local expert on this rank for this layer (empty for dense).
LayerWork layer_work(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, std::int64_t layer,
                     double tokens, const std::vector<double>& rank_rows);

// layer_work for many layers of one plan, each distinct (layer kind, routed rows) priced once: a
// block's kernel times depend on its layer only through those two (the kind: its mixer, its
// feed-forward part and its attention window; uniform routing gives every MoE layer the same rows,
// so a 60-layer model is priced twice, not 60 times).
class LayerWorkCache {
 public:
  LayerWorkCache(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, double tokens)
      : arch_(arch), plan_(plan), costs_(costs), tokens_(tokens) {}
  const LayerWork& get(std::int64_t layer, const std::vector<double>& rank_rows);

 private:
  const Architecture& arch_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  double tokens_;
  std::map<std::pair<LayerSpec, std::vector<double>>, LayerWork> priced_;
};

// With multi-token prediction the head's work includes each MTP module's (mtp_module).
EdgeWork edge_work(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, double tokens);
PassTimes mtp_module(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, double tokens,
                     const EdgeWork& edge);

}  // namespace moesim
