// Flash attention (forward and backward) and memory-bound kernels over the profile's sustained
// rates.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "models/common/errors.hpp"
#include "models/common/units.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/costs/kernel_roofline.hpp"

namespace moesim {

namespace {
using namespace costs_detail;
constexpr double kBf16 = bytes_of(DType::bf16);

// A pass's rate at `seq_len` tokens per sequence: the profile's table where it has one (log-length
// interpolation, clamped at its ends), else its one rate.
double rate_at(const Quantity& rate, const std::optional<ProfileTable>& by_seq_len, double seq_len) {
  return by_seq_len ? interpolate_log_x(*by_seq_len, seq_len) : rate.value;
}

KernelTime roofline(const HardwareProfile& hw, double flops, double rate_TFLOPs, double bytes) {
  KernelTime t = roofline_kernel(hw, flops, flops / (rate_TFLOPs * 1e12), bytes);
  t.rate_TFLOPs = rate_TFLOPs;
  return t;
}

// "flash": FlashAttention (Dao et al. 2022; Dao 2023) never writes the S x S score matrix, so it
// is compute-bound at training lengths and its time is FLOPs over a sustained attention rate.
class FlashAttentionCost final : public AttentionCost {
 public:
  FlashAttentionCost()
      : AttentionCost(
            "flash",
            "FlashAttention-2: score FLOPs (causal half) over the profile's sustained attention rate, backward 2.5x "
            "forward") {}
  AttentionTime time(const HardwareProfile& hw, const AttentionShape& s) const override {
    require_positive(s.sequences, "sequences");
    require_positive(s.seq_len, "seq_len");
    require_positive(s.heads, "heads");
    require_positive(s.head_dim, "head_dim");
    if (s.kv_heads < 0 || s.kv_heads > s.heads) {
      throw InputError("", "kv_heads", "must be between 1 and heads (0 means = heads)");
    }
    const double kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
    const double v_dim = s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
    // Forward: QK^T (head_dim wide) and PV (v_head_dim wide) per head, 2 FLOPs per multiply-add
    // over the (query, key) pairs (FlashAttention-2 paper, benchmark section: 4 S^2 d per head when
    // the widths agree): S^2 without a mask, S^2 / 2 causal, S w - w^2 / 2 under a causal window
    // of w keys (the kernel skips the blocks the window masks whole).
    const double S = s.seq_len, w = s.window > 0 ? std::min(s.window, S) : S;
    const double share = !s.causal ? 1.0 : w < S ? (S * w - w * w / 2.0) / (S * S) : 0.5;  // of the S^2 pairs
    const double fwd_flops = 4.0 * S * S * share * s.heads * ((s.head_dim + v_dim) / 2.0) * s.sequences;
    // Backward: 2.5 x forward (five matmuls against two; the FlashAttention-2 convention).
    const double bwd_flops = 2.5 * fwd_flops;
    // HBM traffic (the scores stay on chip): forward reads Q, K, V and writes O (+ the
    // logsumexp, negligible); backward reads Q, K, V, O, dO and writes dQ, dK, dV.
    const double tokens = s.sequences * s.seq_len * kBf16;
    const double q = tokens * s.heads * s.head_dim, o = tokens * s.heads * v_dim;
    const double k = tokens * kv_heads * s.head_dim, v = tokens * kv_heads * v_dim;
    const double fwd_bytes = (q + o) + (k + v);
    const double bwd_bytes = 2 * (q + o) + 2 * (k + v);
    // The rate by length: each query block pipelines over the key blocks it reads, fewer in a
    // short sequence. A causal window of w keys reads about as many per query as a causal
    // sequence of 2w tokens (w against S / 2 on average), so it takes that length's rate.
    const double length = s.causal && w < S ? 2 * w : S;
    const ComputeSpec& c = hw.compute;
    AttentionTime t;
    t.forward =
        roofline(hw, fwd_flops, rate_at(c.attention_fwd_TFLOPs, c.attention_fwd_TFLOPs_by_seq_len, length), fwd_bytes);
    t.backward =
        roofline(hw, bwd_flops, rate_at(c.attention_bwd_TFLOPs, c.attention_bwd_TFLOPs_by_seq_len, length), bwd_bytes);
    return t;
  }
  // The SSD scan's chunk matmuls (ssd_flops_per_token) at the profile's measured SSD forward rate
  // by sequence length, or, where none was measured, its attention rates (an assumption); the
  // backward twice the forward's FLOPs (two gradient matmuls per forward one) at the forward's
  // rate where only that was measured (an assumption: no backward kernel rate is published).
  // HBM: forward reads x, B, C and dt and writes y, and writes then reads each chunk's FP32 state;
  // backward twice that. PyTorch's "Accelerating Mamba2 with Kernel Fusion" (2025) finds the
  // original kernels bound by memory and latency; the measured chunk-scan rate (about 100
  // TFLOP/s on H100-class GPUs, a tenth of the peak) takes the place of the latency.
  AttentionTime scan(const HardwareProfile& hw, const ScanShape& s) const override {
    require_positive(s.tokens, "tokens");
    require_positive(s.heads, "heads");
    require_positive(s.chunk, "chunk");
    const double fwd_flops = s.tokens * ssd_flops_per_token(s);
    const double per_token = kBf16 * (2 * s.heads * s.head_dim + 2 * s.groups * s.state_dim + s.heads) +
                             2 * 4.0 * s.heads * s.head_dim * s.state_dim / s.chunk;
    const ComputeSpec& c = hw.compute;
    AttentionTime t;
    t.forward = roofline(hw, fwd_flops, rate_at(c.attention_fwd_TFLOPs, c.ssd_scan_fwd_TFLOPs_by_seq_len, s.seq_len),
                         s.tokens * per_token);
    t.backward =
        roofline(hw, 2 * fwd_flops, rate_at(c.attention_bwd_TFLOPs, c.ssd_scan_fwd_TFLOPs_by_seq_len, s.seq_len),
                 2 * s.tokens * per_token);
    return t;
  }
};

// "hbm": bytes (reads + writes) over the sustained HBM bandwidth, plus the launch overhead.
class HbmMemoryBoundCost final : public MemoryBoundCost {
 public:
  HbmMemoryBoundCost()
      : MemoryBoundCost(
            "hbm",
            "Memory-bound kernel: bytes read + written over the sustained copy rate times its kernel class's "
            "fraction, plus the launch overhead") {}
  KernelTime time(const HardwareProfile& hw, double bytes, MemoryKernel kind) const override {
    if (!(bytes >= 0) || !std::isfinite(bytes)) {
      throw InputError("", "bytes", "must be a finite number >= 0, got " + std::to_string(bytes));
    }
    KernelTime t;
    t.hbm_bytes = bytes;
    t.memory_bound = true;
    const double fraction = hw.compute.hbm_fraction_by_kernel[static_cast<std::size_t>(kind)].value;
    t.time_s = bytes / (hbm_Bps(hw) * fraction) + launch_s(hw);
    return t;
  }
};
}  // namespace

MemoryKernel parse_memory_kernel(std::string_view name) { return kMemoryKernelNames.parse(name); }

const Registry<AttentionCost>& attention_cost_models() {
  static const auto registry = make_registry<AttentionCost, FlashAttentionCost>("attention cost model");
  return registry;
}

const Registry<MemoryBoundCost>& memory_bound_cost_models() {
  static const auto registry = make_registry<MemoryBoundCost, HbmMemoryBoundCost>("memory-bound cost model");
  return registry;
}

}  // namespace moesim
