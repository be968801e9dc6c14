// Token routing over routed experts: how many rows each expert receives in one layer and
// microbatch, for the tokens of one EP-MP group. The most-loaded rank sets the pace.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/common/enum_names.hpp"

namespace moesim {

// measured: each layer's share of routed rows per expert comes from a histogram of a real run's
// router statistics (tokens per expert, as users export them), applied to the replay's tokens.
enum class RoutingKind { uniform, random, zipf, measured };

// One layer's measured router statistics.
struct MeasuredLayerLoad {
  std::vector<double> tokens_per_expert;  // as exported; only the shares matter
  std::optional<double> capacity_factor;  // this layer's tokens-dropped cap (absent: the plan's policy)
};

struct RoutingSpec {
  RoutingKind kind = RoutingKind::uniform;
  // measured: by layer index; `measured_default` (an entry without a layer) serves the MoE layers
  // that have none of their own.
  std::map<std::int64_t, MeasuredLayerLoad> measured;
  std::optional<MeasuredLayerLoad> measured_default;
  double zipf_exponent = 1.0;
  std::uint64_t seed = 0x5eed;
  double capacity_factor = 1.0;  // per-expert buffer = cf x the even share; rows beyond are dropped
  bool dropless = true;          // dropless: no cap, buffers sized by the actual load
  // Megatron-Core's sync-free expert path (docs/user-guide/features/paged_stash.md): HybridEP's
  // dispatch and the fused grouped experts' tensors take a static budget of this many times the
  // balanced rows per EP rank (moe_expert_rank_capacity_factor; 0: sized by the load, a host sync).
  double rank_capacity_factor = 0;
  // moe_paged_stash: the routed experts' saved tensors packed into paged buffers sized at this
  // many times the balanced rows in flight (moe_paged_stash_buffer_size_factor_cuda; 0: off).
  double paged_stash_factor = 0;
  // Its pinned host pages, this many times the balanced rows in flight, which a layer's tensors
  // spill to when the CUDA pages are full (moe_paged_stash_buffer_size_factor_cpu; 0: none).
  double paged_stash_host_factor = 0;
};

struct ExpertLoad {
  std::vector<double> rows;  // rows per expert after drops
  double dropped = 0;        // rows dropped by the capacity cap
};

// Rows per expert for `tokens` tokens choosing `top_k` of `experts`. `draw` picks an
// independent sample (the layer index) from the same seeded stream; measured routing reads the
// layer `draw`'s histogram.
ExpertLoad route(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens, std::uint64_t draw);

// Rows each of the `ranks` EP-MP ranks receives (contiguous expert shards).
std::vector<double> rows_per_rank(const ExpertLoad& load, std::int64_t ranks);

// The most-loaded EP-MP rank's routed rows over the given MoE layers (each layer one draw, indexed
// by the layer as the replay draws it), divided by the even share top_k x tokens_per_rank per
// layer: 1 under uniform routing, above 1 under skew. Dropped rows (capacity-capped routing) are
// not received.
double peak_rank_load_factor(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                             std::int64_t ranks, const std::vector<std::int64_t>& layers);

// The most-loaded of `ranks` EP-MP ranks' rows over the even share (1: balanced) for one layer's load.
double rank_imbalance(const ExpertLoad& load, std::int64_t ranks);

inline constexpr EnumNames<RoutingKind, 4> kRoutingKindNames{"routing model",
                                                             {{{RoutingKind::uniform, "uniform"},
                                                               {RoutingKind::random, "random"},
                                                               {RoutingKind::zipf, "zipf"},
                                                               {RoutingKind::measured, "measured"}}}};
constexpr std::string_view name_of(RoutingKind value) { return kRoutingKindNames.name(value); }

}  // namespace moesim
