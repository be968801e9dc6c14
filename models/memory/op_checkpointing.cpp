#include "models/memory/op_checkpointing.hpp"

#include <iterator>

#include "models/common/units.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

namespace {
constexpr double kFp32 = bytes_of(DType::fp32);  // the attention log-sum-exp
}  // namespace

BlockActivations op_checkpointed(const Architecture& a, const ParallelPlan& plan, double e) {
  const TpWidths w = tp_widths(a, plan);
  const double d = dbl(a.d_model), q = w.q, kv = w.kv, h = w.dense_hidden;
  // Output widths of the block's matmuls in call order: wq, wk, wv, wo, then w1, w3, w2.
  constexpr std::size_t kAttentionMatmuls = 4;
  const double widths[] = {q, kv, kv, d, h, h, d};
  BlockActivations b;
  const double lse = kFp32 * w.heads;
  b.attention = e * d * w.seq + e * q + lse;                // input, attention output, LSE
  for (std::size_t i = 0; i < std::size(widths); i += 2) {  // the 1st, 3rd, ... matmul
    (i < kAttentionMatmuls ? b.attention : b.mlp) += e * widths[i];
  }
  b.by_format[static_cast<std::size_t>(SavedFormat::fp32)] = lse;
  b.by_format[static_cast<std::size_t>(SavedFormat::compute)] = b.total() - lse;
  return b;
}

}  // namespace moesim
