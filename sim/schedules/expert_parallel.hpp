// Expert parallelism as a composable piece of the step: the routed experts of one MoE layer on
// one rank. Under EP (EP-MP degree > 1) the routed rows travel to the ranks holding their experts
// and back: a dispatch all-to-all before the expert GEMMs and a combine after, on the EP-MP
// communicator, in every routed layer and microbatch, forward and backward (seed Section 4.3.2).
#pragma once

#include "sim/step_emitter.hpp"

namespace moesim {

enum class ExpertPass { forward, recompute, backward };

struct RoutedExperts {
  double a2a_bytes = 0;       // all_to_all send buffer per rank: combine, and both backward transfers
  double dispatch_bytes = 0;  // the forward (and recompute) dispatch's, FP8 rows or the same
  double work_s = 0;          // the expert GEMMs (and their elementwise work) on this rank's rows
  double etp_bytes = 0;       // expert TP: the rows gathered before and scattered after the GEMMs
};

// Emits dispatch (forward order; combine's gradient in backward), the experts, then combine
// (dispatch's gradient in backward); returns the last task. `at` gives rank, phase, microbatch
// and layer.
TaskId routed_experts(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                      const RoutedExperts& experts, TaskId ready);
// Its three pieces, for a schedule that interleaves them with other work (the EP all-to-all
// overlap): the transfer that brings the rows (and expert TP's gather), the expert GEMMs, the
// transfer that returns them (expert TP's scatter first).
TaskId experts_in(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                  const RoutedExperts& experts, TaskId ready);
TaskId experts_compute(StepEmitter& emit, const TaskPlace& at, ExpertPass pass, const RoutedExperts& experts,
                       TaskId ready);
TaskId experts_out(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                   const RoutedExperts& experts, TaskId ready);

}  // namespace moesim
