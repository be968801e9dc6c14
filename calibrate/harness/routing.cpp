// Seeded top-K routing (see routing.hpp).
#include "routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moesim::cal {

std::uint64_t Rng::next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

std::vector<std::int64_t> route_rows(std::int64_t tokens, std::int64_t experts, std::int64_t top_k, double zipf_s,
                                     std::uint64_t popularity_seed, std::uint64_t token_seed) {
    const auto E = static_cast<std::size_t>(experts);
    std::vector<double> weight(E, 1.0);
    if (zipf_s > 0) {
        std::vector<std::size_t> order(E);
        std::iota(order.begin(), order.end(), std::size_t{0});
        Rng pr(popularity_seed);
        for (std::size_t i = E; i > 1; --i) std::swap(order[i - 1], order[pr.next() % i]);  // Fisher-Yates
        for (std::size_t r = 0; r < E; ++r) weight[order[r]] = 1.0 / std::pow(static_cast<double>(r + 1), zipf_s);
    }
    std::vector<std::int64_t> rows(E, 0);
    std::vector<double> w(E);
    Rng rng(token_seed);
    for (std::int64_t t = 0; t < tokens; ++t) {
        w = weight;
        double total = std::accumulate(w.begin(), w.end(), 0.0);
        for (std::int64_t c = 0; c < top_k && total > 0; ++c) {  // K distinct experts, without replacement
            double x = rng.uniform() * total;
            std::size_t e = 0;
            while (e + 1 < E && (x >= w[e] || w[e] == 0.0)) {
                x -= w[e];
                ++e;
            }
            while (w[e] == 0.0 && e > 0) --e;  // rounding ran past the end: last live expert
            ++rows[e];
            total -= w[e];
            w[e] = 0.0;
        }
    }
    return rows;
}

std::vector<std::vector<std::int64_t>> alltoall_counts(int n, std::int64_t rows_per_rank, std::int64_t experts,
                                                       std::int64_t top_k, double zipf_s, std::uint64_t seed) {
    const auto N = static_cast<std::size_t>(n);
    std::vector<std::vector<std::int64_t>> c(N, std::vector<std::int64_t>(N, 0));
    if (zipf_s < 0) {
        for (auto& row : c) std::fill(row.begin(), row.end(), rows_per_rank / n);
        return c;
    }
    const std::int64_t tokens = rows_per_rank / top_k;
    for (std::size_t src = 0; src < N; ++src) {
        const auto rows = route_rows(tokens, experts, top_k, zipf_s, seed, seed * 31 + src + 1);
        for (std::size_t e = 0; e < rows.size(); ++e) c[src][e * N / static_cast<std::size_t>(experts)] += rows[e];
    }
    return c;
}

}  // namespace moesim::cal
