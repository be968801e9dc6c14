#include "sim/block_parts.hpp"

#include <vector>

#include "models/costs/layer_ops.hpp"
#include "sim/schedules/context_parallel.hpp"
#include "sim/schedules/tensor_parallel.hpp"

namespace moesim {

namespace {

// The trace label of part `i` (a literal): the whole block without points, else named by the
// part's first op.
const char* part_label(const LayerWork& w, std::size_t i, bool backward) {
  if (w.pre_points.empty()) {
    if (backward) return w.moe ? "attention + router backward" : "block backward";
    return w.moe ? "attention + router" : "block";
  }
  switch (static_cast<LayerOpKind>(w.pre_first[i])) {
    case LayerOpKind::attention_elementwise: return backward ? "norm backward" : "norm";
    case LayerOpKind::qkv_projection: return backward ? "attention backward" : "attention";
    case LayerOpKind::attention_core: return backward ? "attention core backward" : "attention core";
    case LayerOpKind::output_projection: return backward ? "output projection backward" : "output projection";
    case LayerOpKind::dense_mlp: return backward ? "MLP backward" : "MLP";
    case LayerOpKind::mlp_down: return backward ? "MLP down backward" : "MLP down";
    case LayerOpKind::residual: return backward ? "residual + norm backward" : "residual + norm";
    case LayerOpKind::router: return backward ? "router backward" : "router";
    default: return backward ? "block part backward" : "block part";
  }
}

class PartWalk {
 public:
  PartWalk(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w, const PartsPass& pass)
      : emit_(emit), plan_(plan), at_(at), w_(w), pass_(pass) {}

  TaskId run(TaskId ready) {
    const std::size_t n = w_.pre_parts.size();
    if (pass_.also_first != kNoTask) waits_.push_back(pass_.also_first);
    TaskId cursor = ready;
    bool first = true;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = pass_.backward ? n - 1 - k : k;
      // The point before this part in the pass's order, and the one after it.
      if (k > 0) cursor = point(pass_.backward ? i : i - 1, cursor);
      const bool has_after = pass_.backward ? i > 0 : i + 1 < n;
      if (has_after) scatter_beside(pass_.backward ? i - 1 : i, cursor);
      const PassTimes& t = w_.pre_parts[i];
      const double time = (!pass_.backward ? t.fwd
                           : pass_.whole   ? t.bwd
                                           : t.input_grad()) +
                          (first ? pass_.extra_first : 0.0);
      if (w_.pre_points.empty() || time > 0) {
        cursor = emit_.kernel(at_, TaskKind::compute, time, part_label(w_, i, pass_.backward), cursor);
        for (TaskId x : waits_) emit_.depend(x, cursor);
        waits_.clear();
        first = false;
      }
      // What ran beside this part: the next kernel waits for it.
      waits_.insert(waits_.end(), beside_.begin(), beside_.end());
      beside_.clear();
    }
    if (!waits_.empty()) {  // communication with no kernel after it in the block: the block ends with it
      cursor = emit_.kernel(at_, TaskKind::compute, 0.0, "wait", cursor);
      for (TaskId x : waits_) emit_.depend(x, cursor);
    }
    return cursor;
  }

 private:
  bool overlapped(LayerPoint p, CollectiveKind kind) const {
    return plan_.tp_comm_overlap && (p == LayerPoint::tp_enter || p == LayerPoint::tp_exit) &&
           tp_collective(p, pass_.backward, plan_.sequence_parallel).kind == kind;
  }

  TpPass tp_pass() const {
    return pass_.backward ? TpPass::backward : pass_.recompute ? TpPass::recompute : TpPass::forward;
  }

  // Under overlap a reduce-scatter runs beside the GEMM that writes its input: started with the
  // part before its point.
  void scatter_beside(std::size_t p, TaskId ready) {
    const LayerPoint lp = w_.pre_points[p];
    if (!overlapped(lp, CollectiveKind::reduce_scatter)) return;
    beside_.push_back(tp_point(emit_, plan_, at_, lp, tp_pass(), static_cast<std::int32_t>(p), w_.tp_bytes, ready));
  }

  // The communication at point `p`: returns what the next part waits for on its path.
  TaskId point(std::size_t p, TaskId ready) {
    const LayerPoint lp = w_.pre_points[p];
    if (lp == LayerPoint::seam) return ready;
    if (lp == LayerPoint::qk_norm_exchange) {
      return blocking(tp_point(emit_, plan_, at_, lp, tp_pass(), static_cast<std::int32_t>(p), w_.qk_norm_bytes, ready),
                      ready);
    }
    if (lp == LayerPoint::tp_enter || lp == LayerPoint::tp_exit) {
      if (overlapped(lp, CollectiveKind::reduce_scatter)) return ready;  // started with the part before
      const TaskId out = tp_point(emit_, plan_, at_, lp, tp_pass(), static_cast<std::int32_t>(p), w_.tp_bytes, ready);
      if (overlapped(lp, CollectiveKind::all_gather)) {  // beside the GEMM that reads it
        beside_.push_back(out);
        return ready;
      }
      return blocking(out, ready);
    }
    const CpPass pass = pass_.backward ? CpPass::backward : pass_.recompute ? CpPass::recompute : CpPass::forward;
    if (plan_.cp_variant == CpVariant::all_to_all) {
      // q, k, v leave at cp_begin forward and their gradients return there backward; the output
      // at cp_end.
      const bool qkv = lp == LayerPoint::cp_begin;
      return blocking(
          cp_all_to_all(emit_, plan_, at_, pass, qkv ? 0 : 1, qkv ? w_.cp_qkv_bytes : w_.cp_out_bytes, ready), ready);
    }
    // The ring opens at cp_begin forward and at cp_end backward (the attention's gradient first)
    // and runs beside the attention.
    if ((lp == LayerPoint::cp_begin) != pass_.backward)
      beside_.push_back(cp_ring(emit_, plan_, at_, pass, w_.cp_ring_bytes, ready));
    return ready;
  }

  // A collective the next part waits for: it also waits for what the part before had beside it.
  TaskId blocking(TaskId task, TaskId ready) {
    if (task == ready) return ready;
    for (TaskId x : waits_) emit_.depend(x, task);
    waits_.clear();
    return task;
  }

  StepEmitter& emit_;
  const ParallelPlan& plan_;
  const TaskPlace& at_;
  const LayerWork& w_;
  const PartsPass& pass_;
  std::vector<TaskId> waits_;   // what the next kernel or blocking collective waits for
  std::vector<TaskId> beside_;  // what runs beside the current part
};

}  // namespace

TaskId emit_parts(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w,
                  const PartsPass& pass, TaskId ready) {
  return PartWalk(emit, plan, at, w, pass).run(ready);
}

}  // namespace moesim
