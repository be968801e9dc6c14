// A loss path's memory as a kernel benchmark measures it (scenarios/validation/memory.json): the
// peak bytes allocated while the path runs forward and backward on inputs the benchmark holds.
#pragma once

#include "models/plan/parallel_plan.hpp"

namespace moesim {

struct LossBenchmark {
  LossImpl impl = LossImpl::standard;
  double tokens = 0;
  double vocab = 0;
  double hidden = 0;  // the head input's width (input_logits false)
  double activation = 2;
  // true: the benchmark calls the loss on logits it holds, and counts them (the path's buffer 1
  // outlives the loss); false: on hidden states and a head weight it holds and does not count
  // (the path's buffer 0).
  bool input_logits = false;
  bool head_weight_gradient = false;  // the benchmark counts the head's [vocab, hidden] gradient too
};

// The path's buffers (loss_paths.hpp) walked as the benchmark allocates them: the head input
// never counted, the input logits never freed, and the head's weight gradient added where counted.
double loss_benchmark_peak_bytes(const LossBenchmark& b);

}  // namespace moesim
