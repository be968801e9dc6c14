#include "sim/unit_passes.hpp"

#include "models/plan/recompute_modules.hpp"
#include "sim/block_parts.hpp"
#include "sim/moe_block.hpp"

namespace moesim {

UnitPasses::UnitPasses(const Architecture& arch, const ParallelPlan& plan, StepEmitter& emit, double tokens,
                       PagedStashCopies& stash)
    : arch_(arch),
      plan_(plan),
      emit_(emit),
      stash_(stash),
      tokens_(tokens),
      edge_tp_bytes_(tokens * dbl(arch.d_model) * bytes_of(plan.precision.compute)) {}

TaskId UnitPasses::tp(const TaskPlace& at, LayerPoint point, TpPass pass, std::size_t index, double bytes,
                      TaskId ready) const {
  return tp_point(emit_, plan_, at, point, pass, static_cast<std::int32_t>(index), bytes, ready);
}

void UnitPasses::forward(RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb, PhaseTag phase,
                         TaskId& cursor) const {
  const TpPass tp_pass = phase == PhaseTag::recompute ? TpPass::recompute : TpPass::forward;
  const TaskPlace at{r, StreamKind::compute, phase, mb, u};
  if (u == -1) {
    cursor = emit_.kernel(at, TaskKind::memory, work.edge.embed.fwd, "embedding", cursor);
    // The vocab-parallel lookup's partial rows summed (scattered under SP) over the TP group.
    cursor = tp(at, LayerPoint::tp_exit, tp_pass, 0, edge_tp_bytes_, cursor);
    return;
  }
  if (u == arch_.num_layers) {
    cursor = tp(at, LayerPoint::tp_enter, tp_pass, 0, edge_tp_bytes_, cursor);
    cursor = emit_.kernel(at, TaskKind::compute, work.edge.head.fwd, "LM head + loss", cursor);
    cursor = vocab_parallel_loss(emit_, plan_, at, 1, tokens_, cursor);
    if (plan_.tp > 1) {
      auto& done = work.loss_done;
      if (done.size() <= static_cast<std::size_t>(mb)) done.resize(static_cast<std::size_t>(mb) + 1, kNoTask);
      done[static_cast<std::size_t>(mb)] = cursor;
    }
    return;
  }
  const LayerWork& w = work.layers[static_cast<std::size_t>(u)];
  if (!w.moe) {
    PartsPass parts;
    parts.recompute = phase == PhaseTag::recompute;
    cursor = emit_parts(emit_, plan_, at, w, parts, cursor);
    return;
  }
  cursor = MoeBlockPass(emit_, plan_, at, w).with(&stash_).run(cursor);
}

void UnitPasses::backward(RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb, BackwardPart part,
                          TaskId& cursor) const {
  const TaskPlace at{r, StreamKind::compute, PhaseTag::backward, mb, u};
  const bool whole = part == BackwardPart::whole;
  const auto time = [whole](const PassTimes& t) { return whole ? t.bwd : t.input_grad(); };
  if (u == arch_.num_layers) {
    const TaskId loss =
        static_cast<std::size_t>(mb) < work.loss_done.size() ? work.loss_done[static_cast<std::size_t>(mb)] : kNoTask;
    cursor = emit_.kernel(at, TaskKind::compute, time(work.edge.head), "LM head + loss backward", cursor, loss);
    cursor = tp(at, LayerPoint::tp_enter, TpPass::backward, 0, edge_tp_bytes_, cursor);
    return;
  }
  if (u == -1) {
    cursor = tp(at, LayerPoint::tp_exit, TpPass::backward, 0, edge_tp_bytes_, cursor);
    cursor = emit_.kernel(at, TaskKind::memory, time(work.edge.embed), "embedding backward", cursor);
    return;
  }
  const LayerWork& w = work.layers[static_cast<std::size_t>(u)];
  if (whole_layer_recompute(plan_, arch_, u)) forward(work, r, u, mb, PhaseTag::recompute, cursor);
  if (w.moe) {
    cursor = MoeBlockPass(emit_, plan_, at, w, whole).with(&stash_).run(cursor);
    return;
  }
  // The parts in reverse, the partial recompute with the first backward kernel.
  PartsPass parts;
  parts.backward = true;
  parts.whole = whole;
  parts.extra_first = w.partial_recompute;
  cursor = emit_parts(emit_, plan_, at, w, parts, cursor);
}

void UnitPasses::weight_gradients(const RankUnitWork& work, std::uint32_t r, std::int64_t u, std::int32_t mb,
                                  TaskId& cursor) const {
  // The embedding's gradient (a scatter-add into its rows) is its whole backward, run in B.
  if (u < 0) return;
  const double time =
      u == arch_.num_layers ? work.edge.head.wgrad : work.layers[static_cast<std::size_t>(u)].weight_gradients();
  cursor = emit_.kernel({r, StreamKind::compute, PhaseTag::backward, mb, u}, TaskKind::compute, time,
                        "weight gradients", cursor);
}

}  // namespace moesim
