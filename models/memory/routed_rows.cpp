#include "models/memory/routed_rows.hpp"

#include <algorithm>

#include "models/common/units.hpp"

namespace moesim {

RoutedRows routed_rows_per_token(const Architecture& a, const ParallelPlan& plan, double load_factor) {
  if (!a.moe) return {};
  const double K = dbl(a.moe->top_k);
  RoutedRows r;
  r.computed = plan.routing.dropless ? K * load_factor : K * plan.routing.capacity_factor;
  r.dispatch = r.computed;
  if (plan.ep > 1 && plan.ep_transport == EpTransport::symmetric_memory) {
    r.dispatch = K * plan.ep_buffer_capacity_factor;
    r.computed = std::min(r.computed, r.dispatch);
  }
  r.saved = r.working = r.computed;
  // token_dispatcher.py (_HybridEPManager.setup_metadata): num_permuted_tokens = tokens x top-k x
  // moe_expert_rank_capacity_factor, a static shape every expert tensor takes; paged_stash.py
  // (allocate_stash_buffers): the stash holds max_num_tokens / that factor (experts.py's
  // avg_num_tokens, the balanced rows) x moe_paged_stash_buffer_size_factor_cuda.
  if (plan.routing.rank_capacity_factor > 0) {
    r.working = K * plan.routing.rank_capacity_factor;
    const double stash = plan.routing.paged_stash_factor;
    r.dispatch = r.saved = stash > 0 ? K * stash : r.working;
  }
  return r;
}

}  // namespace moesim
