// Megatron-Core's paged stash in the step (plan.activations.moe_paged_stash;
// megatron/core/transformer/moe/paged_stash.py): after an MoE layer's grouped MLP forward
// (paged_stash_group_commit, PipelinePostScheduleFunction.forward) the tensors it saved are
// copied into the stash's pages on the pack stream (stash_paged_tensors: paged_stash_copy_kernel
// reads the rank's routed rows and writes the pages), and the next grouped MLP on the rank,
// forward or backward, waits for that copy (wait_for_stash_to_complete); a forward's last MoE
// layer whose own backward runs next keeps its tensors. A layer's tensors are copied back
// (reload_paged_tensors: paged_stash_pop_kernel) on the same stream, issued when the rank's
// grouped MLP before it in the schedule ends (the next schedule layer's reload), and its grouped
// MLP backward waits for them. Each copy reads and writes the rows' saved bytes
// (saved_per_token's routed-expert part) as a memory-bound copy kernel beside the compute. With
// host pages (moe_paged_stash_cpu_factor) a layer whose tensors no longer fit the CUDA pages
// goes to pinned host memory whole (the copy kernel's host freelist), out and back at the host
// link's rate; beyond both, nothing is copied (the overflow the step reruns for). Each forward
// pass takes the pages of its MoE layers' balanced rows x each factor, in layer order. A
// recompute pass runs no stash copies; a rerun step's second try runs without the stash.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/step_emitter.hpp"

namespace moesim {

class PagedStashCopies {
 public:
  PagedStashCopies(const Architecture& arch, const ParallelPlan& plan, const CostBook& costs, StepEmitter& emit);

  // Off for the second try of a rerun step (prepare_for_rerun disables moe_paged_stash).
  void set_enabled(bool on) { enabled_ = on && factor_ > 0; }
  bool enabled() const { return enabled_; }
  // Rank `rank` of `ranks`: layer `layer`'s stashed bytes per microbatch of `tokens`, its routed
  // rows `share` x the balanced top-K rows a token.
  void set_layer(std::uint32_t rank, std::uint32_t ranks, std::int64_t layer, double tokens, double share);
  // The forward of microbatch `mb` that runs next has its backward right after: its last MoE
  // layer `layer` keeps its tensors (no stash, no reload).
  void keep(std::uint32_t rank, std::int64_t layer, std::int32_t mb);
  // A forward pass with `moe_layers` MoE layers starts on `rank`: the pages it may take.
  void begin_forward(std::uint32_t rank, std::int64_t moe_layers);
  // Around the grouped MLP at `at` (its phase forward or backward): the task its kernel follows,
  // and after it the copy it starts.
  TaskId before_experts(const TaskPlace& at, TaskId ready);
  void after_experts(const TaskPlace& at, TaskId done);

 private:
  std::size_t slot(std::uint32_t rank, std::int64_t layer, std::int32_t mb) const;

  const Architecture& arch_;
  const ParallelPlan& plan_;
  const CostBook& costs_;
  StepEmitter& emit_;
  double factor_ = 0;
  bool enabled_ = false;
  std::int64_t layers_ = 0;
  std::int32_t microbatches_ = 0;
  enum Place : std::uint8_t { on_gpu, kept, host, overflow };
  double host_factor_ = 0;
  std::vector<double> bytes_;                 // by rank x layer: the rows' saved bytes
  std::vector<double> rows_;                  // by rank x layer: its rows over the balanced share
  std::vector<double> per_row_;               // by layer: the saved bytes a routed row (-1: not yet)
  std::vector<Place> place_;                  // by rank x microbatch x layer
  std::vector<double> room_gpu_, room_host_;  // by rank: the pages the forward pass has left
  std::vector<TaskId> last_stash_;            // by rank: the latest stash copy
  std::vector<TaskId> last_grouped_;          // by rank: the end of the latest grouped MLP
};

}  // namespace moesim
