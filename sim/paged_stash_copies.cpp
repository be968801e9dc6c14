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
      microbatches_(static_cast<std::int32_t>(batch_shape(plan, arch).microbatches)),
      host_factor_(plan.routing.paged_stash_host_factor) {}

void PagedStashCopies::set_layer(std::uint32_t rank, std::uint32_t ranks, std::int64_t layer, double tokens,
                                 double share) {
  if (factor_ <= 0 || !arch_.is_moe_layer(layer)) return;
  const auto per_rank = static_cast<std::size_t>(layers_);
  if (bytes_.size() != ranks * per_rank) {
    bytes_.assign(ranks * per_rank, 0.0);
    rows_ = bytes_;
    place_.assign(ranks * per_rank * static_cast<std::size_t>(microbatches_), on_gpu);
    last_stash_.assign(ranks, kNoTask);
    last_grouped_.assign(ranks, kNoTask);
    room_gpu_.assign(ranks, 0.0);
    room_host_.assign(ranks, 0.0);
    per_row_.assign(per_rank, -1.0);
  }
  // The routed experts' saved bytes a routed row, under the plan's recompute and formats: the
  // layer's, whichever rank holds it.
  double& per_row = per_row_[static_cast<std::size_t>(layer)];
  if (per_row < 0) {
    RoutedRows one = routed_rows_per_token(arch_, plan_, 1.0), none = one;
    one.dispatch = one.saved = 1;
    none.dispatch = none.saved = 0;
    per_row = saved_per_token(arch_, layer, plan_, one).mlp - saved_per_token(arch_, layer, plan_, none).mlp;
  }
  // Over budget the first try holds the budget's rows (HybridEP drops the rest).
  const double load = std::min(share, plan_.routing.rank_capacity_factor);
  const std::size_t at = rank * per_rank + static_cast<std::size_t>(layer);
  rows_[at] = load;
  bytes_[at] = tokens * dbl(arch_.moe->top_k) * load * per_row;
}

std::size_t PagedStashCopies::slot(std::uint32_t rank, std::int64_t layer, std::int32_t mb) const {
  const auto per_rank = static_cast<std::size_t>(layers_);
  return (rank * static_cast<std::size_t>(microbatches_) + static_cast<std::size_t>(mb)) * per_rank +
         static_cast<std::size_t>(layer);
}

void PagedStashCopies::keep(std::uint32_t rank, std::int64_t layer, std::int32_t mb) {
  if (enabled_) place_[slot(rank, layer, mb)] = kept;
}

void PagedStashCopies::begin_forward(std::uint32_t rank, std::int64_t moe_layers) {
  if (!enabled_) return;
  room_gpu_[rank] = factor_ * dbl(moe_layers);
  room_host_[rank] = host_factor_ * dbl(moe_layers);
}

TaskId PagedStashCopies::before_experts(const TaskPlace& at, TaskId ready) {
  if (!enabled_ || at.phase == PhaseTag::recompute) return ready;
  TaskId reload = kNoTask;
  const double bytes = bytes_[at.rank * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(at.layer)];
  const TaskPlace stream{at.rank, StreamKind::stash, PhaseTag::paged_stash, at.microbatch, at.layer};
  if (at.phase == PhaseTag::backward && bytes > 0) {
    // paged_stash_pop_kernel: read the pages, write the tensor (from host pages over the host link).
    switch (place_[slot(at.rank, at.layer, at.microbatch)]) {
      case on_gpu:
        reload = emit_.memory_kernel(stream, 2 * bytes, MemoryKernel::copy, "reload from paged stash",
                                     last_grouped_[at.rank]);
        break;
      case host:
        reload = emit_.kernel(stream, TaskKind::copy, costs_.host_copy_s(bytes), "reload from paged stash host pages",
                              last_grouped_[at.rank]);
        break;
      case kept:
      case overflow: break;
    }
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
  const std::size_t layer = at.rank * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(at.layer);
  Place& place = place_[slot(at.rank, at.layer, at.microbatch)];
  if (at.phase != PhaseTag::forward || place == kept || bytes_[layer] <= 0) return;
  // paged_stash_copy_kernel: the CUDA pages if the tensors fit, else the host pages, else none.
  const TaskPlace stream{at.rank, StreamKind::stash, PhaseTag::paged_stash, at.microbatch, at.layer};
  if (rows_[layer] <= room_gpu_[at.rank]) {
    room_gpu_[at.rank] -= rows_[layer];
    place = on_gpu;
    last_stash_[at.rank] =
        emit_.memory_kernel(stream, 2 * bytes_[layer], MemoryKernel::copy, "copy into paged stash", done);
  } else if (rows_[layer] <= room_host_[at.rank]) {
    room_host_[at.rank] -= rows_[layer];
    place = host;
    last_stash_[at.rank] = emit_.kernel(stream, TaskKind::copy, costs_.host_copy_s(bytes_[layer]),
                                        "copy into paged stash host pages", done);
  } else {
    place = overflow;
  }
}

}  // namespace moesim
