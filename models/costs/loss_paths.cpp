#include "models/costs/loss_paths.hpp"

#include <algorithm>
#include <string>

#include "models/common/units.hpp"

namespace moesim {

namespace {

constexpr double kFp32 = bytes_of(DType::fp32);
using Step = LossBuffers::Step;

// PyTorch's eager cross-entropy on upcast logits (Olmo-core nn/functional/cross_entropy_loss.py
// cross_entropy_loss: logits.float() then F.cross_entropy; torchtitan's cross_entropy_loss). The
// final-norm output (0) is kept for the head's backward; the BF16 logits (1) are upcast (2);
// log_softmax keeps its FP32 output (3) and frees the upcast copy; the trainer drops the logits.
// Backward: nll_loss's dense FP32 gradient (4) and log_softmax's FP32 gradient (5) are alive with
// the log-probabilities (aten _log_softmax_backward_data), then the BF16 logits gradient (6) and
// the hidden-state gradient (7). Kernels: write the logits, read them, write FP32 log-probs.
class EagerLoss final : public LossPath {
 public:
  EagerLoss()
      : LossPath("standard", "eager PyTorch cross-entropy on FP32-upcast logits: FP32 log-probs kept",
                 {{1, 2 * kFp32}, {1, 2 * kFp32}}) {}
  LossBuffers steps(const LossShape& s) const override {
    const double e = s.activation, d = s.hidden, v = s.vocab;
    return {{{e * d}, {e * v}, {kFp32 * v}, {kFp32 * v}, {0, 2}, {0, 1}},
            {{kFp32 * v}, {kFp32 * v}, {0, 4}, {0, 3}, {e * v}, {0, 5}, {e * d}, {0, 6}, {0, 0}, {0, 7}}};
  }
};

// The same loss under torch.compile (Olmo-core Transformer.apply_compile compiles the LM head
// with its loss; torchtitan compiles its loss function with the "loss" compile component).
// AOTAutograd's min-cut partitioner (torch/_functorch/partitioners.py
// min_cut_rematerialization_partition) saves the BF16 logits (1) and the FP32 row max and
// log-sum-exp (2) instead of the FP32 log-probabilities, whose pointwise ops it recomputes;
// Inductor fuses the upcast, log_softmax and nll_loss into one looped reduction that reads the
// logits twice (row max, then the sum of exponentials), and the backward into one kernel that
// reads the logits and writes the BF16 logits gradient (3); no FP32 logits are ever written.
class CompiledLoss final : public LossPath {
 public:
  CompiledLoss()
      : LossPath("compiled", "torch.compile'd cross-entropy: BF16 logits and row statistics kept, no FP32 copy",
                 {{2, 0}, {2, 0}}) {}
  LossBuffers steps(const LossShape& s) const override { return logits_kept(s, 2); }
  // The head input (0), the BF16 logits (1) and `row_stats` FP32 numbers per token (2) kept; the
  // backward writes the BF16 logits gradient (3) from them, then the hidden-state gradient (4).
  static LossBuffers logits_kept(const LossShape& s, double row_stats) {
    const double e = s.activation, d = s.hidden, v = s.vocab;
    return {{{e * d}, {e * v}, {row_stats * kFp32}}, {{e * v}, {0, 1}, {0, 2}, {e * d}, {0, 3}, {0, 0}, {0, 4}}};
  }
};

// flash-attn's Triton cross-entropy (flash_attn/losses/cross_entropy.py CrossEntropyLoss,
// ops/triton/cross_entropy.py; llm-foundry's default loss_fn "fused_crossentropy"): one kernel
// reads the logits once, keeping a running max and sum per row, and saves the logits with the
// FP32 log-sum-exp; the backward (not in place: inplace_backward defaults to False) reads them and
// writes the logits gradient.
class FlashAttnLoss final : public LossPath {
 public:
  FlashAttnLoss()
      : LossPath("flash_attn", "flash-attn's Triton cross-entropy: logits and log-sum-exp kept", {{1, 0}, {2, 0}}) {}
  LossBuffers steps(const LossShape& s) const override { return CompiledLoss::logits_kept(s, 1); }
};

// Fused linear cross-entropy (Liger-Kernel LigerFusedLinearCrossEntropyFunction, Olmo-core's
// "fused_linear" loss implementation): the logits are produced chunk by chunk and the gradient of
// the head's input is computed in the forward; only that [T, d] gradient outlives it.
class FusedLinearLoss final : public LossPath {
 public:
  FusedLinearLoss()
      : LossPath("fused", "fused linear cross-entropy (Liger): logits chunked, the input gradient made in forward",
                 {{1, 0}, {1, 0}}) {}
  LossBuffers steps(const LossShape& s) const override {
    const double ed = s.activation * s.hidden;
    return {{{ed}}, {{ed}, {0, 0}, {0, 1}}};
  }
};

// Megatron-Core's vocab-parallel cross-entropy (tensor_parallel/cross_entropy.py
// _VocabParallelCrossEntropy, the default: cross_entropy_loss_fusion False): the BF16 logits (1)
// are upcast once (2) and that FP32 buffer becomes, in place, the shifted logits, their
// exponentials and the softmax it saves for backward; the logits are dropped when the loss
// returns. The backward writes the gradient into the saved softmax in place, and autograd casts
// it to the logits' BF16 (3). Kernels, per logit: upcast (read e, write 4), max (read 4), the
// in-place subtract, exp and divide (read + write 4 each), the sum (read 4); backward the in-place
// scale (read + write 4) and the cast (read 4, write e).
class VocabParallelLoss final : public LossPath {
 public:
  VocabParallelLoss()
      : LossPath("vocab_parallel", "Megatron-Core vocab-parallel cross-entropy: one FP32 softmax, in place",
                 {{1, 9 * kFp32}, {1, 3 * kFp32}}) {}
  LossBuffers steps(const LossShape& s) const override { return fp32_gradient_kept(s); }
  // The head input (0) and the BF16 logits (1) with one FP32 buffer per logit (2) that outlives
  // the forward (the logits do not); the backward casts it to a BF16 logits gradient (3).
  static LossBuffers fp32_gradient_kept(const LossShape& s) {
    const double e = s.activation, d = s.hidden, v = s.vocab;
    return {{{e * d}, {e * v}, {kFp32 * v}, {0, 1}}, {{e * v}, {0, 2}, {e * d}, {0, 3}, {0, 0}, {0, 4}}};
  }
};

// The same with cross_entropy_loss_fusion and cross_entropy_fusion_impl "native"
// (megatron/core/fusions/fused_cross_entropy.py: each step a jit_fuser function): the forward's
// buffers; kernels per logit: upcast with the max (read e, write 4), subtract, exp and sum (read
// + write 4), divide (read + write 4); backward the scale written back with the BF16 cast (read 4,
// write 4 and e). The backward's calculate_gradients, one fused function, cannot write into the
// saved softmax it was given: it returns a new FP32 gradient (3) beside it, then its BF16 cast (4).
// Measured (linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv, H100, bf16 logits held
// by the caller): 12 bytes per logit at the peak against the unfused path's 8
// (scenarios/validation/loss_memory.json).
class VocabParallelFusedLoss final : public LossPath {
 public:
  VocabParallelFusedLoss()
      : LossPath("vocab_parallel_fused", "Megatron-Core's fused vocab-parallel cross-entropy (jit_fuser steps)",
                 {{1, 5 * kFp32}, {1, 2 * kFp32}}) {}
  LossBuffers steps(const LossShape& s) const override {
    const double e = s.activation, d = s.hidden, v = s.vocab;
    return {{{e * d}, {e * v}, {kFp32 * v}, {0, 1}},
            {{kFp32 * v}, {e * v}, {0, 2}, {0, 3}, {e * d}, {0, 4}, {0, 0}, {0, 5}}};
  }
};

// Transformer Engine's Triton cross-entropy (transformer_engine/pytorch/triton/cross_entropy.py
// cross_entropy_forward; Megatron-Core's cross_entropy_fusion_impl "te"): an online-softmax pass
// reads the logits, a second reads them again and writes the FP32 input gradient (kept for
// backward; the logits are not); the backward scales it in place (element_mul_kernel) and autograd
// casts it to BF16. The same buffers as Megatron's own path.
class TeCrossEntropyLoss final : public LossPath {
 public:
  TeCrossEntropyLoss()
      : LossPath("te", "Transformer Engine's Triton cross-entropy: FP32 gradient made in forward",
                 {{2, kFp32}, {1, 3 * kFp32}}) {}
  LossBuffers steps(const LossShape& s) const override { return VocabParallelLoss::fp32_gradient_kept(s); }
};

// Cut Cross-Entropy (Wijmans et al. 2024, "Cut Your Losses in Large-Vocabulary Language Models",
// apple/ml-cross-entropy): the forward computes each token's log-sum-exp blockwise in on-chip
// memory and saves it (1, FP32) with the head input; the backward computes the logits again block
// by block (one more head GEMM) and writes only the input gradient (2). No logits reach HBM.
class CutCrossEntropyLoss final : public LossPath {
 public:
  CutCrossEntropyLoss()
      : LossPath("cut", "Cut Cross-Entropy: logits only on chip, log-sum-exp saved, logits recomputed in backward",
                 {{0, 0}, {0, 0}, 1}) {}
  LossBuffers steps(const LossShape& s) const override {
    const double ed = s.activation * s.hidden;
    return {{{ed}, {kFp32}}, {{ed}, {0, 1}, {0, 0}, {0, 2}}};
  }
};

}  // namespace

const Registry<LossPath>& loss_paths() {
  static const Registry<LossPath> registry =
      make_registry<LossPath, EagerLoss, CompiledLoss, FlashAttnLoss, FusedLinearLoss, VocabParallelLoss,
                    VocabParallelFusedLoss, TeCrossEntropyLoss, CutCrossEntropyLoss>("loss path");
  return registry;
}

const LossPath& loss_path(LossImpl impl) { return loss_paths().get(kLossImplNames.name(impl)); }

LossBuffers with_peaks(LossBuffers l) {
  std::vector<double> sizes;
  double live = 0;
  auto walk = [&](const std::vector<LossBuffers::Step>& steps, double& peak) {
    for (const auto& st : steps) {
      if (st.frees >= 0) {
        live -= sizes[static_cast<std::size_t>(st.frees)];
      } else {
        sizes.push_back(st.bytes);
        live += st.bytes;
      }
      peak = std::max(peak, live);
    }
  };
  l.forward = 0;
  walk(l.forward_steps, l.forward);
  l.backward = live;
  walk(l.backward_steps, l.backward);
  return l;
}

LossBuffers loss_buffers(LossImpl impl, const LossShape& shape) { return with_peaks(loss_path(impl).steps(shape)); }

}  // namespace moesim
