// Token routing over routed experts: how many rows each expert receives in one layer and
// microbatch, for the tokens of one EP-MP group. The most-loaded rank sets the pace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moesim {

enum class RoutingKind { uniform, random, zipf };

struct RoutingSpec {
  RoutingKind kind = RoutingKind::uniform;
  double zipf_exponent = 1.0;
  std::uint64_t seed = 0x5eed;
  double capacity_factor = 1.0;  // per-expert buffer = cf x the even share; rows beyond are dropped
  bool dropless = true;          // dropless: no cap, buffers sized by the actual load
};

struct ExpertLoad {
  std::vector<double> rows;  // rows per expert after drops
  double dropped = 0;        // rows dropped by the capacity cap
};

// Rows per expert for `tokens` tokens choosing `top_k` of `experts`. `draw` picks an
// independent sample (layer and microbatch index) from the same seeded stream.
ExpertLoad route(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens, std::uint64_t draw);

// Rows each of the `ranks` EP-MP ranks receives (contiguous expert shards).
std::vector<double> rows_per_rank(const ExpertLoad& load, std::int64_t ranks);

// The most-loaded EP-MP rank's routed rows over the given MoE layers (each layer one draw, indexed
// by the layer as the replay draws it), divided by the even share top_k x tokens_per_rank per
// layer: 1 under uniform routing, above 1 under skew. Dropped rows (capacity-capped routing) are
// not received.
double peak_rank_load_factor(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k,
                             double tokens_per_rank, std::int64_t ranks, const std::vector<std::int64_t>& layers);

std::string_view name_of(RoutingKind k);

}  // namespace moesim
