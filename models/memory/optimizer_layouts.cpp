#include "models/memory/optimizer_layouts.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace moesim {

namespace {

// Every rank of the group starts with nothing.
LayoutResult empty_ranks(std::int64_t group) {
  LayoutResult r;
  r.per_rank.assign(static_cast<std::size_t>(group), 0.0);
  return r;
}

LayoutResult finish(LayoutResult r, const std::vector<double>& numels, std::int64_t group) {
  r.largest = *std::max_element(r.per_rank.begin(), r.per_rank.end());
  r.even_share = std::accumulate(numels.begin(), numels.end(), 0.0) / static_cast<double>(group);
  return r;
}

// Olmo-core (seed 4.3.1): each tensor is flattened and split into D equal contiguous shards when
// numel >= min_numel and numel % D == 0; otherwise it stays replicated on every rank.
class PerTensor final : public OptimizerShardLayout {
 public:
  PerTensor()
      : OptimizerShardLayout(
            "per_tensor",
            "Olmo-core: each tensor split into D equal shards when numel >= min and divisible by D, else replicated") {}
  LayoutResult assign(const std::vector<double>& numels, std::int64_t group, std::int64_t min_numel) const override {
    LayoutResult r = empty_ranks(group);
    const double d = static_cast<double>(group);
    double each = 0;  // every rank gets the same: a shard of each cut tensor, all of the others
    for (double n : numels) {
      const bool shard = group > 1 && n >= static_cast<double>(min_numel) && std::fmod(n, d) == 0.0;
      each += shard ? n / d : n;
      if (shard)
        ++r.cut_tensors;
      else if (group > 1)
        ++r.replicated_tensors;
      if (shard) r.sharded_on_largest += n / d;
    }
    std::fill(r.per_rank.begin(), r.per_rank.end(), each);
    return finish(std::move(r), numels, group);
  }
};

// Megatron-style (seed footnote 1): all tensors concatenated into one flat buffer split into D
// contiguous ranges of ceil(total / D); boundaries may cut through tensors.
class ConcatThenShard final : public OptimizerShardLayout {
 public:
  ConcatThenShard()
      : OptimizerShardLayout(
            "concat_then_shard",
            "Megatron-style: one flat buffer of all tensors cut into D equal ranges, through tensor boundaries") {}
  LayoutResult assign(const std::vector<double>& numels, std::int64_t group, std::int64_t) const override {
    LayoutResult r = empty_ranks(group);
    const double total = std::accumulate(numels.begin(), numels.end(), 0.0);
    const double chunk = std::ceil(total / static_cast<double>(group));
    double start = 0;
    for (double n : numels) {
      const double end = start + n;
      const auto first = static_cast<std::int64_t>(start / chunk);
      const auto last = static_cast<std::int64_t>(std::max(start, end - 1) / chunk);
      if (last > first) ++r.cut_tensors;
      start = end;
    }
    for (std::int64_t k = 0; k < group; ++k) {
      const double lo = chunk * static_cast<double>(k);
      r.per_rank[static_cast<std::size_t>(k)] = std::clamp(total - lo, 0.0, chunk);
    }
    r.sharded_on_largest = group > 1 ? chunk : 0.0;
    return finish(std::move(r), numels, group);
  }
};

// Naive baseline (seed Figure 10): each rank gets the same number of whole tensors
// (ceil(T / D) consecutive tensors per rank), whatever their sizes.
class SameParamCount final : public OptimizerShardLayout {
 public:
  SameParamCount()
      : OptimizerShardLayout(
            "same_param_count",
            "Naive baseline (seed Figure 10): each rank gets the same number of whole tensors, whatever their sizes") {}
  LayoutResult assign(const std::vector<double>& numels, std::int64_t group, std::int64_t) const override {
    LayoutResult r = empty_ranks(group);
    const auto count = static_cast<std::int64_t>(numels.size());
    const std::int64_t per = (count + group - 1) / group;
    for (std::int64_t i = 0; i < count; ++i) {
      r.per_rank[static_cast<std::size_t>(std::min(i / std::max<std::int64_t>(per, 1), group - 1))] +=
          numels[static_cast<std::size_t>(i)];
    }
    r = finish(std::move(r), numels, group);
    r.sharded_on_largest = group > 1 ? r.largest : 0.0;
    return r;
  }
};

}  // namespace

const Registry<OptimizerShardLayout>& optimizer_layouts() {
  static const auto registry =
      make_registry<OptimizerShardLayout, PerTensor, ConcatThenShard, SameParamCount>("optimizer layout");
  return registry;
}

}  // namespace moesim
