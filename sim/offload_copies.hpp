// Megatron-Core's fine-grained activation offloading in the step (plan.activations.offload_modules;
// megatron/core/pipeline_parallel/fine_grained_activation_offload.py at d98e8a64dd): after a
// block's forward its offloaded groups are copied to pinned host memory on a D2H stream, which
// the compute stream does not wait for; in the backward each block's groups are reloaded on an
// H2D stream, the next block's reload issued when a block's backward starts (its
// group_commit_backward), and a block's backward waits for its own reload. Each copy runs at the
// host link's rate (CostBook::host_copy_s); the bytes are the block's offloaded_per_token.
// Megatron-Core keeps one group of each module on the GPU after its warm-up step (its offload
// margin); every block is offloaded here, so the first reload of each backward pass is exposed.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/step_emitter.hpp"

namespace moesim {

class OffloadCopies {
 public:
  OffloadCopies(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, StepEmitter& emit);

  bool active() const { return active_; }
  // Rank `rank` with this many ranks in all: its blocks' offloaded bytes per microbatch of
  // `tokens`, layer `l` with `routed_load` routed rows per token over top-K (1: an even share).
  void set_layer(std::uint32_t rank, std::uint32_t ranks, std::int64_t layer, double tokens, double routed_load);
  // A rerun step's second try on `rank` (models/plan/sync_free.hpp): its copies are new ones.
  void new_try(std::uint32_t rank);
  // After unit `u`'s forward of microbatch `mb` (ending at `done`): its copy to the host.
  void after_forward(std::uint32_t rank, std::int64_t u, std::int32_t mb, TaskId done);
  // Before the backward of `units[i]` (the backward pass's units in order) starts at `cursor`:
  // its reload if not issued yet, the next unit's reload, and the wait for its own (the new cursor).
  TaskId before_backward(std::uint32_t rank, const std::vector<std::int64_t>& units, std::size_t i, std::int32_t mb,
                         TaskId cursor);

 private:
  TaskId reload(std::uint32_t rank, std::int64_t u, std::int32_t mb, TaskId after);
  std::size_t slot(std::uint32_t rank, std::int64_t u, std::int32_t mb) const;
  double bytes(std::uint32_t rank, std::int64_t u) const;  // unit u's offloaded bytes per microbatch
  bool offloaded(std::uint32_t rank, std::int64_t u) const;

  const Architecture& arch_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  StepEmitter& emit_;
  bool active_ = false;
  std::int64_t layers_ = 0;
  std::int32_t microbatches_ = 0;
  std::vector<double> bytes_;      // by rank x layer
  std::vector<TaskId> d2h_, h2d_;  // by rank x microbatch x layer
};

}  // namespace moesim
