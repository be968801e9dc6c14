// The buffers context parallelism allocates around each attention core while it runs, as
// Transformer Engine's CP attention does (transformer_engine/pytorch/attention/
// dot_product_attention/context_parallel.py, BF16 path; Megatron-Core's CP calls it):
// - ring (AttnFuncWithCPAndKVP2P): forward keeps every step's K/V buffer (p2p_comm_buffers: the
//   rank's own K and V concatenated, then one received per step, all referenced until the
//   function returns) and every step's partial output and FP32 log-sum-exp (out_per_step,
//   softmax_lse_per_step, read again by the final correction); on the last rank of the ring every
//   step runs its whole query chunk (the load-balanced causal split), so each output is full
//   size. Backward holds two K/V and two dK/dV buffers (p2p_comm_buffers = [[kv, dkv], [kv, dkv]])
//   and a dQ buffer (empty_like(q)). What it saves for backward (q, the last K/V buffer, out,
//   lse) matches flash attention's own, so saved activations do not change.
// - all-to-all (AttnFuncWithCPAndQKVOA2A): the exchanged q, k, v beside the rank's own while the
//   all-to-all runs, in both passes.
#include <string>

#include "models/common/units.hpp"
#include "models/memory/working_terms.hpp"

namespace moesim {

LedgerItem context_parallel_buffers(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                                    bool backward) {
  if (plan.cp == 1 || l < 0 || l >= a.num_layers || a.layer(l).mixer != Mixer::attention) return {};
  const TpWidths w = tp_widths(a, plan);
  const double e = bytes_of(plan.precision.compute), cp = dbl(plan.cp);
  const double kv = w.kv + w.v;  // K and V values per token on this rank
  if (plan.cp_variant == CpVariant::all_to_all) {
    return {"CP all-to-all buffers", MemClass::cp_comm_buffers, T * (w.q + kv) * e,
            "T x (q + k + v) x compute dtype: the exchanged copies beside the rank's own"};
  }
  if (!backward) {
    const double lse = w.heads * bytes_of(DType::fp32);
    return {"CP ring buffers", MemClass::cp_comm_buffers, cp * T * (kv * e + w.out * e + lse),
            "CP x T x (k + v + out per step) x compute dtype + FP32 log-sum-exp per step (" + std::to_string(plan.cp) +
                " steps)"};
  }
  return {"CP ring buffers", MemClass::cp_comm_buffers, T * (4 * kv + w.q) * e,
          "T x (2 K/V + 2 dK/dV + dQ buffers) x compute dtype"};
}

}  // namespace moesim
