#include "models/moe/routing.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

namespace moesim {

namespace {

// Expert choice probabilities: even, or Zipf (p_i ~ 1 / (i + 1)^s), the usual skew model.
std::vector<double> probabilities(const RoutingSpec& spec, std::int64_t experts) {
  std::vector<double> p(static_cast<std::size_t>(experts), 1.0);
  if (spec.kind == RoutingKind::zipf) {
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = 1.0 / std::pow(static_cast<double>(i + 1), spec.zipf_exponent);
  }
  double sum = 0;
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  return p;
}

// The measured histogram serving layer `layer` (validate_plan guarantees one exists).
const MeasuredLayerLoad& measured_layer(const RoutingSpec& spec, std::int64_t layer) {
  const auto it = spec.measured.find(layer);
  return it != spec.measured.end() ? it->second : *spec.measured_default;
}

// Drops the rows above ceil(cf x the even share) of each expert.
void cap_rows(ExpertLoad& load, double capacity_factor, double total, std::int64_t experts) {
  const double cap = std::ceil(capacity_factor * total / static_cast<double>(experts));
  for (auto& r : load.rows) {
    if (r > cap) {
      load.dropped += r - cap;
      r = cap;
    }
  }
}

ExpertLoad measured_route(const RoutingSpec& spec, std::int64_t experts, double total, std::int64_t layer) {
  const MeasuredLayerLoad& m = measured_layer(spec, layer);
  double sum = 0;
  for (double t : m.tokens_per_expert) sum += t;
  ExpertLoad load;
  for (double t : m.tokens_per_expert) load.rows.push_back(total * t / sum);
  if (m.capacity_factor) {
    cap_rows(load, *m.capacity_factor, total, experts);
  } else if (!spec.dropless) {
    cap_rows(load, spec.capacity_factor, total, experts);
  }
  return load;
}

}  // namespace

namespace {

ExpertLoad draw_route(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens,
                      std::uint64_t draw) {
  const double total = tokens * static_cast<double>(top_k);
  if (spec.kind == RoutingKind::measured) return measured_route(spec, experts, total, static_cast<std::int64_t>(draw));
  const auto p = probabilities(spec, experts);
  ExpertLoad load;
  load.rows.assign(p.size(), 0.0);
  if (spec.kind == RoutingKind::uniform) {
    for (auto& r : load.rows) r = total / static_cast<double>(experts);
  } else {
    // Multinomial(total, p) drawn as a chain of binomials (exact, O(experts)); a top-K choice
    // is treated as K independent picks, which overstates collisions by at most K/N.
    std::mt19937_64 rng(spec.seed ^ (0x9e3779b97f4a7c15ULL * (draw + 1)));
    double left = total, mass = 1.0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (i + 1 == p.size() || left <= 0) {
        load.rows[i] = left;
        break;
      }
      const double q = std::min(1.0, p[i] / mass);
      std::binomial_distribution<long long> bin(static_cast<long long>(left), q);
      load.rows[i] = static_cast<double>(bin(rng));
      left -= load.rows[i];
      mass -= p[i];
    }
  }
  if (!spec.dropless) cap_rows(load, spec.capacity_factor, total, experts);
  return load;
}

// A pure function's results kept by key across threads, up to `cap` of them (then started
// afresh): the memos below store what a drawn routing gives.
template <typename Key, typename Value>
class BoundedMemo {
 public:
  explicit BoundedMemo(std::size_t cap) : cap_(cap) {}
  template <typename Compute>
  Value get(Key key, Compute compute) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    }
    Value value = compute();
    const std::lock_guard<std::mutex> lock(mutex_);
    if (memo_.size() >= cap_) memo_.clear();
    memo_.emplace(std::move(key), value);
    return value;
  }

 private:
  std::size_t cap_;
  std::mutex mutex_;
  std::map<Key, Value> memo_;
};

// Everything a drawn (uniform or Zipf) routing depends on. The step builder and the step-time
// bound ask for every MoE layer's routing once per simulated rank, and a plan search asks again
// for every candidate that shares the microbatch and EP degree.
using DrawKey =
    std::tuple<RoutingKind, std::uint64_t, double, double, bool, std::int64_t, std::int64_t, double, std::uint64_t>;
// Bounded: a search's distinct keys are its (microbatch, EP) pairs times the MoE layers.
constexpr std::size_t kMaxMemoisedDraws = 1 << 14;

}  // namespace

ExpertLoad route(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens, std::uint64_t draw) {
  if (spec.kind == RoutingKind::measured) return draw_route(spec, experts, top_k, tokens, draw);
  static BoundedMemo<DrawKey, ExpertLoad> memo(kMaxMemoisedDraws);
  return memo.get(
      {spec.kind, spec.seed, spec.zipf_exponent, spec.capacity_factor, spec.dropless, experts, top_k, tokens, draw},
      [&] { return draw_route(spec, experts, top_k, tokens, draw); });
}

double rank_imbalance(const ExpertLoad& load, std::int64_t ranks) {
  const auto rows = rows_per_rank(load, ranks);
  double peak = 0, sum = 0;
  for (double r : rows) {
    peak = std::max(peak, r);
    sum += r;
  }
  return sum > 0 ? peak * static_cast<double>(ranks) / sum : 1.0;
}

std::vector<double> rows_per_rank(const ExpertLoad& load, std::int64_t ranks) {
  std::vector<double> out(static_cast<std::size_t>(ranks), 0.0);
  const std::size_t per = load.rows.size() / static_cast<std::size_t>(ranks);
  for (std::size_t i = 0; i < load.rows.size(); ++i) out[i / per] += load.rows[i];
  return out;
}

namespace {

double compute_peak_rank_load_factor(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k,
                                     double tokens_per_rank, std::int64_t ranks,
                                     const std::vector<std::int64_t>& layers) {
  std::vector<double> per_rank(static_cast<std::size_t>(ranks), 0.0);
  for (const std::int64_t l : layers) {
    const auto rows = rows_per_rank(
        route(spec, experts, top_k, tokens_per_rank * static_cast<double>(ranks), static_cast<std::uint64_t>(l)),
        ranks);
    for (std::size_t i = 0; i < rows.size(); ++i) per_rank[i] += rows[i];
  }
  double peak = 0;
  for (double x : per_rank) peak = std::max(peak, x);
  return peak / (static_cast<double>(layers.size()) * tokens_per_rank * static_cast<double>(top_k));
}

// Everything the factor depends on, for a drawn (uniform or Zipf) routing. A plan search asks for
// the same stage's factor for every candidate that shares its microbatch and EP degree, and each
// answer redraws every MoE layer's routing.
using DrawnLoadKey = std::tuple<RoutingKind, std::uint64_t, double, double, bool, std::int64_t, std::int64_t, double,
                                std::int64_t, std::vector<std::int64_t>>;
// Bounded: a search's distinct keys are its (microbatch, EP, stage) combinations, a few hundred.
constexpr std::size_t kMaxMemoisedLoads = 4096;

}  // namespace

double peak_rank_load_factor(const RoutingSpec& spec, std::int64_t experts, std::int64_t top_k, double tokens_per_rank,
                             std::int64_t ranks, const std::vector<std::int64_t>& layers) {
  if (layers.empty() || ranks < 1 || tokens_per_rank <= 0) return 1.0;
  if (spec.kind == RoutingKind::measured) {
    return compute_peak_rank_load_factor(spec, experts, top_k, tokens_per_rank, ranks, layers);
  }
  static BoundedMemo<DrawnLoadKey, double> memo(kMaxMemoisedLoads);
  return memo.get({spec.kind, spec.seed, spec.zipf_exponent, spec.capacity_factor, spec.dropless, experts, top_k,
                   tokens_per_rank, ranks, layers},
                  [&] { return compute_peak_rank_load_factor(spec, experts, top_k, tokens_per_rank, ranks, layers); });
}

}  // namespace moesim
