#include "sim/paged_stash_copies.hpp"

#include <algorithm>

#include "models/memory/activations.hpp"

namespace moesim {

PagedStashCopies::PagedStashCopies(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs,
                                   StepEmitter& emit)
    : arch_(arch),
      plan_(plan),
      costs_(costs),
      emit_(emit),
      factor_(plan.routing.paged_stash_factor),
      enabled_(factor_ > 0),
      layers_(arch.num_layers),
      microbatches_(static_cast<std::int32_t>(batch_shape(plan, arch).microbatches)) {}

void PagedStashCopies::set_layer(std::uint32_t rank, std::uint32_t ranks, std::int64_t layer, double tokens,
                                 double share) {
  if (factor_ <= 0 || !arch_.is_moe_layer(layer)) return;
  const auto per_rank = static_cast<std::size_t>(layers_);
  if (bytes_.size() != ranks * per_rank) {
    bytes_.assign(ranks * per_rank, 0.0);
    kept_.assign(ranks * per_rank * static_cast<std::size_t>(microbatches_), 0);
    last_stash_.assign(ranks, kNoTask);
    last_grouped_.assign(ranks, kNoTask);
  }
  // The routed experts' saved bytes a routed row, under the plan's recompute and formats.
  RoutedRows one = routed_rows_per_token(arch_, plan_, 1.0), none = one;
  one.dispatch = one.saved = 1;
  none.dispatch = none.saved = 0;
  const double per_row = saved_per_token(arch_, layer, plan_, one).mlp - saved_per_token(arch_, layer, plan_, none).mlp;
  // Over budget the first try holds the budget's rows (HybridEP drops the rest).
  const double rows = tokens * dbl(arch_.moe->top_k) * std::min(share, plan_.routing.rank_capacity_factor);
  bytes_[rank * per_rank + static_cast<std::size_t>(layer)] = 2 * rows * per_row;  // read + write
}

std::size_t PagedStashCopies::slot(std::uint32_t rank, std::int64_t layer, std::int32_t mb) const {
  const auto per_rank = static_cast<std::size_t>(layers_);
  return (rank * static_cast<std::size_t>(microbatches_) + static_cast<std::size_t>(mb)) * per_rank +
         static_cast<std::size_t>(layer);
}

void PagedStashCopies::keep(std::uint32_t rank, std::int64_t layer, std::int32_t mb) {
  if (enabled_) kept_[slot(rank, layer, mb)] = 1;
}

TaskId PagedStashCopies::before_experts(const TaskPlace& at, TaskId ready) {
  if (!enabled_ || at.phase == PhaseTag::recompute) return ready;
  TaskId reload = kNoTask;
  const double bytes = bytes_[at.rank * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(at.layer)];
  if (at.phase == PhaseTag::backward && !kept_[slot(at.rank, at.layer, at.microbatch)] && bytes > 0) {
    reload = emit_.memory_kernel({at.rank, StreamKind::stash, PhaseTag::paged_stash, at.microbatch, at.layer}, bytes,
                                 MemoryKernel::copy, "reload from paged stash", last_grouped_[at.rank]);
  }
  const TaskId stashed = last_stash_[at.rank];
  if (reload == kNoTask && stashed == kNoTask) return ready;
  // The compute stream waits for the copies (cudaStreamWaitEvent): no work of its own.
  const TaskId wait = emit_.kernel({at.rank, StreamKind::compute, PhaseTag::paged_stash, at.microbatch, at.layer},
                                   TaskKind::host, 0.0, "wait for paged stash", ready, stashed);
  emit_.depend(reload, wait);
  last_stash_[at.rank] = kNoTask;  // waited for (the pack stream is idle again)
  return wait;
}

void PagedStashCopies::after_experts(const TaskPlace& at, TaskId done) {
  if (!enabled_ || at.phase == PhaseTag::recompute) return;
  last_grouped_[at.rank] = done;
  const double bytes = bytes_[at.rank * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(at.layer)];
  if (at.phase != PhaseTag::forward || kept_[slot(at.rank, at.layer, at.microbatch)] || bytes <= 0) return;
  last_stash_[at.rank] =
      emit_.memory_kernel({at.rank, StreamKind::stash, PhaseTag::paged_stash, at.microbatch, at.layer}, bytes,
                          MemoryKernel::copy, "copy into paged stash", done);
}

}  // namespace moesim
