#include "sim/offload_copies.hpp"

#include <algorithm>

#include "models/memory/activations.hpp"

namespace moesim {

OffloadCopies::OffloadCopies(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs,
                             StepEmitter& emit)
    : arch_(arch),
      plan_(plan),
      costs_(costs),
      emit_(emit),
      active_(!plan.offload_modules.empty()),
      layers_(arch.num_layers),
      microbatches_(static_cast<std::int32_t>(batch_shape(plan, arch).microbatches)) {}

void OffloadCopies::set_layer(std::uint32_t rank, std::uint32_t ranks, std::int64_t layer, double tokens,
                              double routed_load) {
  if (!active_) return;
  const std::size_t per_rank = static_cast<std::size_t>(layers_);
  if (bytes_.size() != ranks * per_rank) {
    bytes_.assign(ranks * per_rank, 0.0);
    d2h_.assign(ranks * per_rank * static_cast<std::size_t>(microbatches_), kNoTask);
    h2d_ = d2h_;
  }
  const RoutedRows rows = routed_rows_per_token(arch_, plan_, routed_load);
  bytes_[rank * per_rank + static_cast<std::size_t>(layer)] =
      tokens * offloaded_per_token(arch_, layer, plan_, rows).total();
}

void OffloadCopies::new_try(std::uint32_t rank) {
  if (!active_) return;
  const std::size_t from = slot(rank, 0, 0), to = slot(rank + 1, 0, 0);
  std::fill(d2h_.begin() + static_cast<std::ptrdiff_t>(from), d2h_.begin() + static_cast<std::ptrdiff_t>(to), kNoTask);
  std::fill(h2d_.begin() + static_cast<std::ptrdiff_t>(from), h2d_.begin() + static_cast<std::ptrdiff_t>(to), kNoTask);
}

std::size_t OffloadCopies::slot(std::uint32_t rank, std::int64_t u, std::int32_t mb) const {
  const auto per_rank = static_cast<std::size_t>(layers_);
  return (rank * static_cast<std::size_t>(microbatches_) + static_cast<std::size_t>(mb)) * per_rank +
         static_cast<std::size_t>(u);
}

double OffloadCopies::bytes(std::uint32_t rank, std::int64_t u) const {
  return bytes_[rank * static_cast<std::size_t>(layers_) + static_cast<std::size_t>(u)];
}

bool OffloadCopies::offloaded(std::uint32_t rank, std::int64_t u) const {
  return active_ && u >= 0 && u < layers_ && bytes(rank, u) > 0;
}

void OffloadCopies::after_forward(std::uint32_t rank, std::int64_t u, std::int32_t mb, TaskId done) {
  if (!offloaded(rank, u)) return;
  d2h_[slot(rank, u, mb)] = emit_.kernel({rank, StreamKind::offload_d2h, PhaseTag::offload, mb, u}, TaskKind::copy,
                                         costs_.host_copy_s(bytes(rank, u)), "offload to host", done);
}

TaskId OffloadCopies::reload(std::uint32_t rank, std::int64_t u, std::int32_t mb, TaskId after) {
  TaskId& id = h2d_[slot(rank, u, mb)];
  if (id != kNoTask) return id;
  id = emit_.kernel({rank, StreamKind::offload_h2d, PhaseTag::offload, mb, u}, TaskKind::copy,
                    costs_.host_copy_s(bytes(rank, u)), "reload from host", after, d2h_[slot(rank, u, mb)]);
  return id;
}

TaskId OffloadCopies::before_backward(std::uint32_t rank, const std::vector<std::int64_t>& units, std::size_t i,
                                      std::int32_t mb, TaskId cursor) {
  const std::int64_t u = units[i];
  const TaskId own = offloaded(rank, u) ? reload(rank, u, mb, cursor) : kNoTask;
  if (i + 1 < units.size() && offloaded(rank, units[i + 1])) reload(rank, units[i + 1], mb, cursor);
  if (own == kNoTask) return cursor;
  return emit_.kernel({rank, StreamKind::compute, PhaseTag::offload, mb, u}, TaskKind::host, 0.0, "wait for reload",
                      cursor, own);
}

}  // namespace moesim
