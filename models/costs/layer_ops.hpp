// A transformer block as an ordered list of ops, described once: what each op is, on which stream
// it runs and its kernel times on one rank for one microbatch. The step builder and the step-time
// bound read the block from here (through `segments`), so a new layer kind (MLA, a Mamba mixer, a GELU MLP) is a new
// list, and a parallelism piece puts its communication at a named point of the list (the EP all-to-alls at
// `ep_dispatch`/`ep_combine`). The list is the block's data flow, not a schedule: the order of tasks in time lives in
// sim/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/common/enum_names.hpp"
#include "models/costs/cost_book.hpp"
#include "models/costs/layer_work.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

enum class LayerOpKind : std::uint8_t {
  attention_elementwise,  // norms, QK-norm, RoPE, residual add (memory-bound)
  qkv_projection,         // [T, d] x [d, q + 2 kv] (MLA: the down and up projections of q and kv)
  attention_core,         // causal flash attention (over a sliding window where the layer has one)
  output_projection,      // [T, q] x [q, d]
  dense_mlp,              // MLP: up(/gate), down and its elementwise kernels
  router,                 // [T, d] x [d, experts]
  router_elementwise,     // norm, FP32 softmax and top-K
  permute,                // the K routed copies of each token into expert order
  dispatch_cast,          // FP8 quantization of each token before an FP8 dispatch (forward only)
  ep_dispatch,            // point: the EP all-to-all that sends the routed rows
  routed_experts,         // grouped GEMMs (up/gate, down) and SwiGLU on this rank's rows
  ep_combine,             // point: the EP all-to-all that returns them
  unpermute,              // the routed copies back to token order
  combine_elementwise,    // weighting of the K copies, their sum and the residual add
  shared_expert,          // one shared expert's SwiGLU MLP, beside the routed path
  tp_enter,               // point: a TP region opens (SP: all-gather; without SP: its backward's all-reduce)
  tp_exit,                // point: a TP region closes (SP: reduce-scatter; without SP: all-reduce)
  cp_begin,               // point: context parallelism's exchange around the attention core starts
  cp_end,                 // point: and ends
  tp_seam,                // point: a task boundary only (TP communication overlap's GEMM edges)
  residual,               // under TP: a residual add (and the next norm) after its region closes
  mlp_down,               // under TP: the dense MLP's down projection, apart from its up/gate
  mixer_elementwise,      // a Mamba-2 layer's norm and residual add (memory-bound)
  mamba_in_projection,    // [T, d] x [d, z + x + B + C + dt]
  ssd_scan,               // depthwise causal conv1d, the SSD scan and the gated RMSNorm
  mamba_out_projection,   // [T, d_inner] x [d_inner, d]
  qk_norm_exchange,       // point: under TP a whole-projection QK-norm moves q and k to sequence shards (and back)
};

inline constexpr EnumNames<LayerOpKind, 27> kLayerOpKindNames{
    "layer op",
    {{{LayerOpKind::attention_elementwise, "attention_elementwise"},
      {LayerOpKind::qkv_projection, "qkv_projection"},
      {LayerOpKind::attention_core, "attention_core"},
      {LayerOpKind::output_projection, "output_projection"},
      {LayerOpKind::dense_mlp, "dense_mlp"},
      {LayerOpKind::router, "router"},
      {LayerOpKind::router_elementwise, "router_elementwise"},
      {LayerOpKind::permute, "permute"},
      {LayerOpKind::dispatch_cast, "dispatch_cast"},
      {LayerOpKind::ep_dispatch, "ep_dispatch"},
      {LayerOpKind::routed_experts, "routed_experts"},
      {LayerOpKind::ep_combine, "ep_combine"},
      {LayerOpKind::unpermute, "unpermute"},
      {LayerOpKind::combine_elementwise, "combine_elementwise"},
      {LayerOpKind::shared_expert, "shared_expert"},
      {LayerOpKind::tp_enter, "tp_enter"},
      {LayerOpKind::tp_exit, "tp_exit"},
      {LayerOpKind::cp_begin, "cp_begin"},
      {LayerOpKind::cp_end, "cp_end"},
      {LayerOpKind::tp_seam, "tp_seam"},
      {LayerOpKind::residual, "residual"},
      {LayerOpKind::mlp_down, "mlp_down"},
      {LayerOpKind::mixer_elementwise, "mixer_elementwise"},
      {LayerOpKind::mamba_in_projection, "mamba_in_projection"},
      {LayerOpKind::ssd_scan, "ssd_scan"},
      {LayerOpKind::mamba_out_projection, "mamba_out_projection"},
      {LayerOpKind::qk_norm_exchange, "qk_norm_exchange"}}}};
constexpr std::string_view name_of(LayerOpKind value) { return kLayerOpKindNames.name(value); }

// Where an op runs: on the block's main compute stream, beside it on the side stream (from the
// last main op before the EP dispatch to the op after the combine; under TP between its own
// TP collectives), or a point with no kernel of its own where communication sits.
enum class OpPlace : std::uint8_t { main, side, point };

struct LayerOp {
  LayerOpKind kind;
  OpPlace place = OpPlace::main;
  PassTimes times;  // zero for a point
};

struct LayerOps {
  bool moe = false;
  std::vector<LayerOp> ops;      // in data-flow order
  double a2a_bytes = 0;          // all_to_all send buffer per rank: combine (= BF16 dispatch, every backward)
  double dispatch_bytes = 0;     // the forward dispatch's (smaller when precision.ep_dispatch is FP8)
  double partial_recompute = 0;  // kernels the plan's partial recompute adds to the block's backward
  double tp_bytes = 0;           // what each TP collective moves: the microbatch's [T, d] activations
  double cp_ring_bytes = 0;      // one ring step's K and V chunk (context parallelism, ring)
  double cp_qkv_bytes = 0;       // the all-to-all variant's q, k, v exchange
  double cp_out_bytes = 0;       // and its output exchange
  double qk_norm_bytes = 0;      // each all-to-all of q and k around a whole-projection QK-norm under TP
  double etp_bytes = 0;          // expert TP: the gathered routed rows (all-gather out, reduce-scatter in)
};

// The ops of layer `layer` for `tokens` tokens; `rank_rows`: routed rows per local expert on this
// rank (empty for a dense layer).
LayerOps layer_ops(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, std::int64_t layer,
                   double tokens, const std::vector<double>& rank_rows);

// The list cut at its points into what the step runs as tasks: the main ops before the EP
// dispatch (`pre`; all of a dense block; under TP also cut at each TP point into `pre_parts`),
// those between dispatch and combine (`experts`), the main ops after the combine (`post`) and
// the side ops (`shared`), each summed in list order.
LayerWork segments(const LayerOps& ops);

}  // namespace moesim
