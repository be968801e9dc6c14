#include "sim/moe_block.hpp"

#include "sim/block_parts.hpp"
#include "sim/schedules/tensor_parallel.hpp"

namespace moesim {

MoeBlockPass::MoeBlockPass(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, const LayerWork& w,
                           bool whole)
    : emit_(emit), plan_(plan), at_(at), w_(w), whole_(whole) {
  pass_ = at.phase == PhaseTag::backward    ? ExpertPass::backward
          : at.phase == PhaseTag::recompute ? ExpertPass::recompute
                                            : ExpertPass::forward;
  // Backward: both transfers move BF16 rows, and a partial recompute redoes its share with the
  // experts' GEMMs; forward, the dispatch may send FP8 rows.
  routed_ = backward() ? RoutedExperts{w.a2a_bytes, w.a2a_bytes, time(w.experts) + w.partial_recompute, w.etp_bytes}
                       : RoutedExperts{w.a2a_bytes, w.dispatch_bytes, w.experts.fwd, w.etp_bytes};
}

TaskId MoeBlockPass::front(TaskId ready) {
  const std::size_t n = w_.pre_points.size();  // the shared expert's TP points follow the parts'
  const TaskPlace side{at_.rank, StreamKind::side, at_.phase, at_.microbatch, at_.layer};
  const auto tp = [&](LayerPoint point, TpPass pass, std::size_t index, TaskId after) {
    return tp_point(emit_, plan_, at_, point, pass, static_cast<std::int32_t>(index), w_.tp_bytes, after);
  };
  if (backward()) {
    const TaskId post = emit_.kernel(at_, TaskKind::compute, time(w_.post), "combine backward", ready);
    if (w_.shared.bwd > 0) {
      shared_ = w_.shared_tp ? tp(LayerPoint::tp_exit, TpPass::backward, n + 1, post) : post;
      shared_ = emit_.kernel(side, TaskKind::compute, time(w_.shared), "shared expert backward", shared_);
      if (w_.shared_tp) shared_ = tp(LayerPoint::tp_enter, TpPass::backward, n, shared_);
    }
    return post;
  }
  PartsPass parts;
  parts.recompute = at_.phase == PhaseTag::recompute;
  const TaskId pre = emit_parts(emit_, plan_, at_, w_, parts, ready);
  if (w_.shared.fwd > 0) {
    const TpPass pass = parts.recompute ? TpPass::recompute : TpPass::forward;
    shared_ = w_.shared_tp ? tp(LayerPoint::tp_enter, pass, n, pre) : pre;
    shared_ = emit_.kernel(side, TaskKind::compute, w_.shared.fwd, "shared expert", shared_);
    if (w_.shared_tp) shared_ = tp(LayerPoint::tp_exit, pass, n + 1, shared_);
  }
  return pre;
}

TaskId MoeBlockPass::experts_in(TaskId ready) const {
  return moesim::experts_in(emit_, plan_, at_, pass_, routed_, ready);
}

TaskId MoeBlockPass::experts(TaskId ready) {
  if (stash_ == nullptr) return experts_compute(emit_, at_, pass_, routed_, ready);
  const TaskId done = experts_compute(emit_, at_, pass_, routed_, stash_->before_experts(at_, ready));
  stash_->after_experts(at_, done);
  return done;
}

TaskId MoeBlockPass::experts_out(TaskId ready) const {
  return moesim::experts_out(emit_, plan_, at_, pass_, routed_, ready);
}

TaskId MoeBlockPass::mlp_weight_gradients(TaskId ready) const {
  return emit_.kernel(at_, TaskKind::compute, w_.experts.wgrad + w_.shared.wgrad, "expert weight gradients", ready,
                      shared_);
}

TaskId MoeBlockPass::attention_weight_gradients(TaskId ready) const {
  return emit_.kernel(at_, TaskKind::compute, w_.pre.wgrad + w_.post.wgrad, "weight gradients", ready);
}

TaskId MoeBlockPass::back(TaskId routed) {
  if (!backward()) return emit_.kernel(at_, TaskKind::compute, w_.post.fwd, "combine", routed, shared_);
  // The parts before the dispatch in reverse, the first also after the shared expert's backward.
  PartsPass parts;
  parts.backward = true;
  parts.whole = whole_;
  parts.also_first = shared_;
  return emit_parts(emit_, plan_, at_, w_, parts, routed);
}

}  // namespace moesim
