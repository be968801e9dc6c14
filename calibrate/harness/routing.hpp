// Seeded top-K routing of tokens over experts, for the grouped GEMM's per-expert row counts and
// the all-to-all's per-peer row counts. Deterministic: own generator, no std distributions.
#pragma once

#include <cstdint>
#include <vector>

namespace moesim::cal {

// Small deterministic generator (splitmix64 stream).
class Rng {
  public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next();
    double uniform();  // [0, 1)

  private:
    std::uint64_t state_;
};

// Rows routed to each expert when `tokens` tokens each choose top_k distinct experts. zipf_s = 0:
// uniform random choice (the report's benchmarks); s > 0: expert popularity proportional to
// 1/rank^s over a seeded random ranking of the experts (popularity_seed), the same on every
// source rank. token_seed varies the tokens' draws.
std::vector<std::int64_t> route_rows(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, double zipf_s,
                                     std::uint64_t popularity_seed, std::uint64_t token_seed);

// Row counts[src][dst] of an expert-parallel all-to-all over n ranks: each source rank routes
// rows_per_rank / top_k tokens; expert e lives on rank e * n / experts. zipf_s < 0: exactly
// uniform split (rows_per_rank / n to every peer), the nccl-tests alltoall pattern.
std::vector<std::vector<std::int64_t>> alltoall_counts(int n, std::int64_t rows_per_rank, std::int64_t experts,
                                                       std::int64_t top_k, double zipf_s, std::uint64_t seed);

}  // namespace moesim::cal
