#include "fuzz/plan_space.hpp"

#include <cstdint>
#include <initializer_list>

namespace moesim::fuzz {

namespace {

class ByteStream {
 public:
  explicit ByteStream(std::string_view data) : data_(data) {}
  // Continue from byte `pos` (draws past the end of the data pick the first choice).
  void seek(std::size_t pos) { pos_ = pos; }
  template <typename T>
  T pick(std::initializer_list<T> choices) {
    const auto b = pos_ < data_.size() ? static_cast<unsigned char>(data_[pos_]) : 0u;
    ++pos_;
    return *(choices.begin() + b % choices.size());
  }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

std::string set(const std::string& path, const std::string& value) { return path + "=" + value; }
std::string set(const std::string& path, std::int64_t value) { return path + "=" + std::to_string(value); }

}  // namespace

std::vector<std::string> plan_space_overrides(std::string_view data) {
  ByteStream in(data);
  std::vector<std::string> s;
  const std::int64_t nodes = in.pick<std::int64_t>({1, 2, 4, 16, 128, 1250, 12500});
  const std::int64_t gpn = in.pick<std::int64_t>({8, 1, 2, 4});
  const std::int64_t pp = in.pick<std::int64_t>({1, 2, 4, 8});
  const std::int64_t layers = in.pick<std::int64_t>({8, 1, 2, 3, 4});
  const std::int64_t experts = in.pick<std::int64_t>({48, 1, 2, 8, 64, 256, 1024});
  const std::int64_t seq = in.pick<std::int64_t>({8192, 1, 2, 128, 4096});
  const std::int64_t mbs = in.pick<std::int64_t>({2, 1, 4});
  const std::int64_t microbatches = in.pick<std::int64_t>({1, 2, 3, 8, 32});
  s.push_back(set("plan.design", in.pick<const char*>({"ddp", "fsdp", "zero2"})));
  s.push_back(set("plan.nodes", nodes));
  s.push_back(set("plan.gpus_per_node", gpn));
  s.push_back(set("plan.pipeline.degree", pp));
  s.push_back(
      set("plan.pipeline.schedule", in.pick<const char*>({"1f1b", "interleaved_1f1b", "1f1b_v", "zb_h1", "zbv"})));
  s.push_back(set("plan.pipeline.virtual_stages", in.pick<std::int64_t>({1, 2, 4})));
  s.push_back(set("plan.expert_parallel.degree", in.pick<std::int64_t>({8, 1, 2, 4, 16, 64, 1024})));
  s.push_back(
      set("plan.expert_parallel.transport", in.pick<const char*>({"symmetric_memory", "nccl_all_to_all", "deepep"})));
  s.push_back(set("plan.expert_parallel.buffer_capacity_factor", in.pick<const char*>({"1.25", "0.01", "1", "8"})));
  s.push_back(set("plan.expert_parallel.shared_buffers", in.pick<const char*>({"false", "true"})));
  s.push_back(set("architecture.num_layers", layers));
  s.push_back(set("architecture.dense_layers", in.pick<const char*>({"[0]", "[]"})));
  s.push_back(set("architecture.moe.num_experts", experts));
  s.push_back(set("architecture.moe.top_k", in.pick<std::int64_t>({4, 1, 2, 8, experts})));
  s.push_back(set("architecture.moe.shared_experts", in.pick<std::int64_t>({1, 0})));
  s.push_back(set("architecture.sequence_length", seq));
  s.push_back(set("plan.batch.rank_microbatch_sequences", mbs));
  // A global batch that is `microbatches` whole microbatches of every data-parallel rank.
  const std::int64_t dp = nodes * gpn / pp;
  s.push_back(set("plan.batch.global_batch_tokens", seq * mbs * (dp > 0 ? dp : 1) * microbatches));
  s.push_back(set("plan.routing.model", in.pick<const char*>({"uniform", "random", "zipf"})));
  s.push_back(set("plan.routing.zipf_exponent", in.pick<const char*>({"1.0", "0", "8"})));
  s.push_back(set("plan.routing.capacity_factor", in.pick<const char*>({"1.0", "0.01", "0.5", "0.9", "1.25", "4"})));
  s.push_back(set("plan.routing.dropless", in.pick<const char*>({"true", "false"})));
  s.push_back(set("plan.activations.recompute", in.pick<const char*>({"none", "full", "selective"})));
  s.push_back(set("plan.fsdp.shard_degree", in.pick<std::int64_t>({0, 1, 2, 8})));
  s.push_back(set("plan.fsdp.prefetch_depth", in.pick<std::int64_t>({1, 0, 2})));
  s.push_back(set("plan.ddp.grad_sync", in.pick<const char*>({"all_reduce", "reduce_scatter"})));
  s.push_back(set("plan.ddp.distributed_optimizer", in.pick<const char*>({"true", "false"})));
  s.push_back(set("plan.optimizer.type", in.pick<const char*>({"adamw", "muon", "sgd"})));
  s.push_back(set("plan.optimizer.implementation", in.pick<const char*>({"foreach", "fused", "olmo_core_foreach"})));
  s.push_back(set("plan.optimizer.weight_rebuild", in.pick<const char*>({"coalesced_copy", "in_place"})));
  s.push_back(
      set("plan.optimizer.layout", in.pick<const char*>({"per_tensor", "concat_then_shard", "same_param_count"})));
  // Drawn last, so that the draws above stay as the corpus's inputs were written for them.
  s.push_back(set("plan.expert_parallel.pxn", in.pick<const char*>({"true", "false"})));
  // TP, CP and expert TP read bytes 40 onward, so inputs written for the draws above (the corpus,
  // the step-bound test's 40-byte plans) decode as before: without them.
  constexpr std::size_t kParallelismDraws = 40;
  in.seek(kParallelismDraws);
  const std::int64_t tp = in.pick<std::int64_t>({1, 2, 4, 8});
  const std::int64_t cp = in.pick<std::int64_t>({1, 2});
  s.push_back(set("plan.tensor_parallel.degree", tp));
  s.push_back(set("plan.tensor_parallel.sequence_parallel", in.pick<const char*>({"true", "false"})));
  s.push_back(set("plan.tensor_parallel.comm_overlap", in.pick<const char*>({"false", "true"})));
  s.push_back(set("plan.context_parallel.degree", cp));
  s.push_back(set("plan.context_parallel.variant", in.pick<const char*>({"ring", "all_to_all"})));
  s.push_back(set("plan.expert_parallel.tensor_degree", in.pick<std::int64_t>({1, 2})));
  // With TP or CP the data-parallel replicas of a sequence are fewer: the batch again whole.
  const std::int64_t replicas = nodes * gpn / (pp * tp * cp);
  if (tp * cp > 1)
    s.push_back(set("plan.batch.global_batch_tokens", seq * mbs * (replicas > 0 ? replicas : 1) * microbatches));
  return s;
}

}  // namespace moesim::fuzz
