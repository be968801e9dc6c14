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

// The routed experts' pass in three pieces (a pass runs them in order; the EP all-to-all overlap
// interleaves them with another block's): the transfer that brings the rows (dispatch forward,
// combine's gradient backward; expert TP's gather after it), the expert GEMMs, the transfer that
// returns them (expert TP's scatter first). `at` gives rank, phase, microbatch and layer.
TaskId experts_in(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                  const RoutedExperts& experts, TaskId ready);
TaskId experts_compute(StepEmitter& emit, const TaskPlace& at, ExpertPass pass, const RoutedExperts& experts,
                       TaskId ready);
TaskId experts_out(StepEmitter& emit, const ParallelPlan& plan, const TaskPlace& at, ExpertPass pass,
                   const RoutedExperts& experts, TaskId ready);

}  // namespace moesim
