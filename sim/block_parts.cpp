#include "sim/block_parts.hpp"

#include "models/costs/layer_ops.hpp"
#include "sim/schedules/context_parallel.hpp"
#include "sim/schedules/tensor_parallel.hpp"

namespace moesim {

TaskId layer_point(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w, std::size_t i,
                   bool backward, bool recompute, TaskId ready, TaskId& ring, TaskId& pending) {
  const LayerPoint p = w.pre_points[i];
  if (p == LayerPoint::tp_enter || p == LayerPoint::tp_exit) {
    const TpPass pass = backward ? TpPass::backward : recompute ? TpPass::recompute : TpPass::forward;
    const TaskId out = tp_point(emit, plan, at, p, pass, static_cast<std::int32_t>(i), w.tp_bytes, ready);
    if (out != ready) {  // a collective of its own: it waits for the ring too
      emit.depend(pending, out);
      pending = kNoTask;
    }
    return out;
  }
  const CpPass pass = backward ? CpPass::backward : recompute ? CpPass::recompute : CpPass::forward;
  if (plan.cp_variant == CpVariant::all_to_all) {
    // q, k, v leave at cp_begin forward and their gradients return there backward; the output
    // at cp_end.
    const bool qkv = p == LayerPoint::cp_begin;
    return cp_all_to_all(emit, plan, at, pass, qkv ? 0 : 1, qkv ? w.cp_qkv_bytes : w.cp_out_bytes, ready);
  }
  // Forward the passes open at cp_begin, backward at cp_end (the attention's gradient first).
  if ((p == LayerPoint::cp_begin) != backward) {
    ring = cp_ring(emit, plan, at, pass, w.cp_ring_bytes, ready);
  } else {
    pending = ring;
    ring = kNoTask;
  }
  return ready;
}

const char* part_label(const LayerWork& w, std::size_t i, bool backward) {
  if (w.pre_points.empty()) {
    if (backward) return w.moe ? "attention + router backward" : "block backward";
    return w.moe ? "attention + router" : "block";
  }
  // Named by the part's first op.
  switch (static_cast<LayerOpKind>(w.pre_first[i])) {
    case LayerOpKind::attention_elementwise: return backward ? "norm backward" : "norm";
    case LayerOpKind::qkv_projection: return backward ? "attention backward" : "attention";
    case LayerOpKind::attention_core: return backward ? "attention core backward" : "attention core";
    case LayerOpKind::output_projection: return backward ? "output projection backward" : "output projection";
    case LayerOpKind::dense_mlp: return backward ? "MLP backward" : "MLP";
    case LayerOpKind::router: return backward ? "router backward" : "router";
    default: return backward ? "block part backward" : "block part";
  }
}

}  // namespace moesim
