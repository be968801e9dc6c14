// How the LM head's loss runs (plan.activations.loss): one registered implementation per loss
// path, each with the buffers it allocates and frees per token (what the working memory holds)
// and the bytes its cross-entropy kernels move per logit (what the step spends on them). The
// head GEMM itself is priced as a linear by layer_work.cpp; a path that runs it again adds it.
#pragma once

#include <vector>

#include "models/common/registry.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

// The sizes a loss path's buffers are made of, per token of the microbatch: `activation` bytes of
// the compute dtype per element, `hidden` the model width (the head's input), `vocab` the logits
// one rank holds (1/TP of the vocabulary under tensor parallelism).
struct LossShape {
  double activation = 2;
  double hidden = 0;
  double vocab = 0;
};

// Logits and loss buffers of the LM head per token, as the op sequence allocates and frees them:
// a step with bytes > 0 allocates the next buffer (numbered from 0 in order), a step with
// frees >= 0 frees that buffer. The forward's survivors are held until the head's backward.
struct LossBuffers {
  struct Step {
    double bytes = 0;
    int frees = -1;
  };
  std::vector<Step> forward_steps, backward_steps;
  double forward = 0;   // most bytes alive during the forward steps
  double backward = 0;  // most alive during the backward steps (the forward's survivors included)
};

// Bytes a path's cross-entropy kernels move per logit: so many compute-dtype elements plus so
// many fixed (FP32) bytes.
struct LogitTraffic {
  double activations = 0;
  double fixed_bytes = 0;
  double bytes(double activation) const { return activations * activation + fixed_bytes; }
};

class LossPath : public Registered {
 public:
  struct Traffic {
    LogitTraffic forward, backward;
    double recomputed_head_gemms = 0;  // head GEMMs run again in backward (logits never stored)
  };
  constexpr LossPath(std::string_view name, std::string_view description, Traffic traffic)
      : Registered(name, description), traffic_(traffic) {}
  // The buffers' steps (forward and backward); loss_buffers() adds their peaks.
  virtual LossBuffers steps(const LossShape& shape) const = 0;
  // Bytes the cross-entropy kernels read and write per logit, forward and backward.
  double forward_bytes_per_logit(double activation) const { return traffic_.forward.bytes(activation); }
  double backward_bytes_per_logit(double activation) const { return traffic_.backward.bytes(activation); }
  double recomputed_head_gemms() const { return traffic_.recomputed_head_gemms; }

 private:
  Traffic traffic_;
};

// Registered under name_of(LossImpl): "standard", "compiled", "flash_attn", "fused",
// "vocab_parallel", "vocab_parallel_fused", "te", "cut".
const Registry<LossPath>& loss_paths();
const LossPath& loss_path(LossImpl impl);

// `l` with its forward and backward peaks walked from its steps.
LossBuffers with_peaks(LossBuffers l);
// The path's steps with their forward and backward peaks filled in.
LossBuffers loss_buffers(LossImpl impl, const LossShape& shape);

}  // namespace moesim
