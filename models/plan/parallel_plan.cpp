#include "models/plan/parallel_plan.hpp"

#include <algorithm>

#include "models/arch/architecture.hpp"
#include "models/common/json_reader.hpp"
#include "models/moe/measured_loads.hpp"

namespace moesim {

int OptimizerSpec::states() const {
  switch (kind) {
    case OptimizerKind::adamw: return 2;
    case OptimizerKind::muon: return 1;
    case OptimizerKind::sgd: return 0;
  }
  return 0;
}

std::int64_t ParallelPlan::domain_gpus() const {
  const std::int64_t hosts = std::max<std::int64_t>(domain_hosts, 1);
  for (std::int64_t domains = (nodes + hosts - 1) / hosts; domains < nodes; ++domains) {
    if (nodes % domains == 0) return nodes / domains * gpus_per_node;
  }
  return gpus_per_node;  // one host per domain
}

std::string_view name_of(LowPrecisionLibrary library) {
  return library == LowPrecisionLibrary::torchao ? "torchao" : "transformer_engine";
}

std::string_view name_of(Design d) { return d == Design::fsdp ? "fsdp" : "ddp"; }
std::string_view name_of(OptimizerKind k) {
  return k == OptimizerKind::adamw ? "adamw" : k == OptimizerKind::muon ? "muon" : "sgd";
}
std::string_view name_of(ShardLayout l) {
  return l == ShardLayout::per_tensor          ? "per_tensor"
         : l == ShardLayout::concat_then_shard ? "concat_then_shard"
                                               : "same_param_count";
}
std::string_view name_of(OptimizerKernels k) {
  return k == OptimizerKernels::fused ? "fused" : k == OptimizerKernels::foreach ? "foreach" : "olmo_core_foreach";
}
std::string_view name_of(AllocatorModel m) {
  return m == AllocatorModel::pytorch_caching ? "pytorch_caching" : "fixed_fraction";
}
std::string_view name_of(WeightRebuild w) { return w == WeightRebuild::coalesced_copy ? "coalesced_copy" : "in_place"; }
std::string_view name_of(LinearClass c) {
  switch (c) {
    case LinearClass::attention: return "attention";
    case LinearClass::dense_mlp: return "dense_mlp";
    case LinearClass::shared_expert: return "shared_expert";
    case LinearClass::routed_expert: return "routed_expert";
    case LinearClass::lm_head: return "lm_head";
  }
  return "?";
}
std::string_view name_of(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved_1f1b: return "interleaved_1f1b";
    case PipelineSchedule::one_f_one_b_v: return "1f1b_v";
    case PipelineSchedule::zb_h1: return "zb_h1";
    case PipelineSchedule::zbv: return "zbv";
  }
  return "?";
}
std::string_view name_of(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::full: return "full";
    case Recompute::selective: return "selective";
    case Recompute::selective_op: return "selective_op";
  }
  return "?";
}

namespace {
constexpr double kMaxCount = 1 << 24;

DType parse_dtype(const JsonReader& in, std::string_view key, DType fallback) {
  const std::string s = in.choice_or(key, std::string(name_of(fallback)), {"fp32", "bf16", "fp16", "fp8"});
  if (s == "fp32") return DType::fp32;
  if (s == "bf16") return DType::bf16;
  if (s == "fp16") return DType::fp16;
  return DType::fp8;
}

// Olmo-core's DDP design runs EP on its production rowwise NVSHMEM path (symmetric buffers,
// olmo_core/nn/moe/v2/ep_config.py); FSDP2 stacks (torchtitan) dispatch with NCCL all_to_all_single.
EpTransport default_ep_transport(Design design) {
  return design == Design::ddp ? EpTransport::symmetric_memory : EpTransport::nccl_all_to_all;
}

EpTransport parse_ep_transport(const JsonReader& ep, Design design) {
  const std::string chosen = ep.choice_or("transport", std::string(name_of(default_ep_transport(design))),
                                          {"nccl_all_to_all", "symmetric_memory", "deepep"});
  for (const EpTransport t : all_ep_transports()) {
    if (name_of(t) == chosen) return t;
  }
  return default_ep_transport(design);  // choice_or allows only the names above
}

// Defaults follow the two designs' code: Olmo-core DDP steps its sharded optimizer with its own
// foreach AdamW (OLMoDDPOptimizer._step_foreach), its FSDP path with torch's AdamW, whose default
// on CUDA is the foreach implementation (fused=None, foreach=None).
OptimizerKernels default_kernels(Design design) {
  return design == Design::ddp ? OptimizerKernels::olmo_core_foreach : OptimizerKernels::foreach;
}

OptimizerSpec parse_optimizer(const JsonReader& in, Design design) {
  OptimizerSpec o;
  const auto kernels = in.choice_or("implementation", std::string(name_of(default_kernels(design))),
                                    {"fused", "foreach", "olmo_core_foreach"});
  o.kernels = kernels == "fused"     ? OptimizerKernels::fused
              : kernels == "foreach" ? OptimizerKernels::foreach
                                     : OptimizerKernels::olmo_core_foreach;
  const auto kind = in.choice_or("type", "adamw", {"adamw", "muon", "sgd"});
  o.kind = kind == "adamw" ? OptimizerKind::adamw : kind == "muon" ? OptimizerKind::muon : OptimizerKind::sgd;
  o.main_weight_dtype = parse_dtype(in, "main_weight_dtype", DType::fp32);
  o.state_dtype = parse_dtype(in, "state_dtype", DType::fp32);
  const auto layout = in.choice_or("layout", "per_tensor", {"per_tensor", "concat_then_shard", "same_param_count"});
  o.layout = layout == "per_tensor"          ? ShardLayout::per_tensor
             : layout == "concat_then_shard" ? ShardLayout::concat_then_shard
                                             : ShardLayout::same_param_count;
  o.min_shard_numel = in.integer_or("min_shard_numel", o.min_shard_numel, Range::at_least(1));
  o.foreach_chunk_numel = in.integer_or("foreach_chunk_numel", o.foreach_chunk_numel, Range::at_least(1));
  o.rebuild = in.choice_or("weight_rebuild", "coalesced_copy", {"coalesced_copy", "in_place"}) == "coalesced_copy"
                  ? WeightRebuild::coalesced_copy
                  : WeightRebuild::in_place;
  in.finish();
  return o;
}

// Olmo-core's DDP keeps low-precision weight caches (seed 4.4.3); FSDP2 gathers weights per use
// and has none to keep.
bool default_weight_caches(Design design) { return design == Design::ddp; }

PrecisionSpec parse_precision(const JsonReader& in, Design design) {
  PrecisionSpec p;
  p.compute = parse_dtype(in, "compute_dtype", DType::bf16);
  p.grad_accum = parse_dtype(in, "grad_accum_dtype", DType::fp32);
  p.reduce = parse_dtype(in, "reduce_dtype", DType::fp32);
  if (auto l = in.optional_object("linears")) {
    for (std::size_t c = 0; c < kLinearClasses; ++c) {
      const std::string_view key = name_of(static_cast<LinearClass>(c));
      p.linears[c] = parse_gemm_precision(l->choice_or(key, "bf16", {"bf16", "fp8", "mxfp8"}));
    }
    l->finish();
  }
  p.ep_dispatch = parse_gemm_precision(in.choice_or("ep_dispatch", "bf16", {"bf16", "fp8", "mxfp8"}));
  p.weight_caches = in.boolean_or("weight_caches", default_weight_caches(design));
  p.library = in.choice_or("library", "torchao", {"torchao", "transformer_engine"}) == "torchao"
                  ? LowPrecisionLibrary::torchao
                  : LowPrecisionLibrary::transformer_engine;
  in.finish();
  return p;
}
}  // namespace

ParallelPlan parse_plan(const JsonReader& in) {
  ParallelPlan p;
  in.string_or("name", "");
  in.string_or("description", "");
  p.design = in.choice("design", {"fsdp", "ddp"}) == "fsdp" ? Design::fsdp : Design::ddp;
  p.nodes = in.integer("nodes", Range::between(1, kMaxCount));
  p.gpus_per_node = in.integer("gpus_per_node", Range::between(1, 1024));
  if (auto pp = in.optional_object("pipeline")) {
    p.pp = pp->integer_or("degree", 1, Range::between(1, kMaxCount));
    constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b,
                                               PipelineSchedule::one_f_one_b_v, PipelineSchedule::zb_h1,
                                               PipelineSchedule::zbv};
    const auto sched = pp->choice_or("schedule", "1f1b", {"1f1b", "interleaved_1f1b", "1f1b_v", "zb_h1", "zbv"});
    for (const PipelineSchedule k : kSchedules) {
      if (name_of(k) == sched) p.pp_schedule = k;
    }
    p.pp_virtual = pp->integer_or("virtual_stages", 1, Range::between(1, 64));
    p.pp_layer_split = pp->integer_list_or("layer_split", Range::between(1, 4096));
    pp->finish();
  }
  if (auto ep = in.optional_object("expert_parallel")) {
    p.ep = ep->integer_or("degree", 1, Range::between(1, kMaxCount));
    p.ep_transport = parse_ep_transport(*ep, p.design);
    p.ep_buffer_capacity_factor = ep->number_or("buffer_capacity_factor", 1.25, Range::between(0.01, 1024));
    p.ep_buffers_shared = ep->boolean_or("shared_buffers", false);
    if (ep->has("pxn")) p.ep_pxn = ep->boolean("pxn") ? PxnChoice::on : PxnChoice::off;
    ep->finish();
  } else {
    p.ep_transport = default_ep_transport(p.design);
  }
  if (auto f = in.optional_object("fsdp")) {
    p.fsdp_shard = f->integer_or("shard_degree", 0, Range::between(0, kMaxCount));
    p.fsdp_prefetch = f->integer_or("prefetch_depth", 1, Range::between(0, 8));
    f->finish();
  }
  if (auto d = in.optional_object("ddp")) {
    p.distributed_optimizer = d->boolean_or("distributed_optimizer", true);
    p.bucket_cap_bytes = d->number_or("bucket_cap_MiB", 250.0, Range::positive()) * kMiB;
    p.grad_sync = d->choice_or("grad_sync", "all_reduce", {"all_reduce", "reduce_scatter"}) == "all_reduce"
                      ? GradSync::all_reduce
                      : GradSync::reduce_scatter;
    d->finish();
  }
  if (auto o = in.optional_object("optimizer")) {
    p.optimizer = parse_optimizer(*o, p.design);
  } else {
    p.optimizer.kernels = default_kernels(p.design);
  }
  if (auto pr = in.optional_object("precision")) {
    p.precision = parse_precision(*pr, p.design);
  } else {
    p.precision.weight_caches = default_weight_caches(p.design);
  }
  const auto batch = in.object("batch");
  p.microbatch_sequences = batch.integer("rank_microbatch_sequences", Range::between(1, kMaxCount));
  p.global_batch_tokens = batch.integer("global_batch_tokens", Range::between(1, 1e15));
  batch.finish();
  if (auto act = in.optional_object("activations")) {
    const auto rc = act->choice_or("recompute", "none", {"none", "full", "selective", "selective_op"});
    for (Recompute r : {Recompute::none, Recompute::full, Recompute::selective, Recompute::selective_op}) {
      if (rc == name_of(r)) p.recompute = r;
    }
    p.loss =
        act->choice_or("loss", "standard", {"standard", "fused"}) == "standard" ? LossImpl::standard : LossImpl::fused;
    act->finish();
  }
  if (auto al = in.optional_object("allocator")) {
    p.allocator.model =
        al->choice_or("model", "pytorch_caching", {"pytorch_caching", "fixed_fraction"}) == "pytorch_caching"
            ? AllocatorModel::pytorch_caching
            : AllocatorModel::fixed_fraction;
    p.allocator.expandable_segments = al->boolean_or("expandable_segments", false);
    al->finish();
  }
  if (auto r = in.optional_object("routing")) {
    const auto kind = r->choice_or("model", "uniform", {"uniform", "random", "zipf", "measured"});
    p.routing.kind = kind == "uniform"    ? RoutingKind::uniform
                     : kind == "random"   ? RoutingKind::random
                     : kind == "measured" ? RoutingKind::measured
                                          : RoutingKind::zipf;
    if (p.routing.kind == RoutingKind::measured) parse_measured_loads(*r, p.routing);
    p.routing.zipf_exponent = r->number_or("zipf_exponent", 1.0, Range::between(0.0, 8.0));
    p.routing.seed = static_cast<std::uint64_t>(r->integer_or("seed", 0x5eed, Range::between(0, 9.007199254740992e15)));
    p.routing.capacity_factor = r->number_or("capacity_factor", 1.0, Range::between(0.01, 1024));
    p.routing.dropless = r->boolean_or("dropless", true);
    r->finish();
  }
  in.finish();
  return p;
}

BatchShape batch_shape(const ParallelPlan& p, const Architecture& a) {
  BatchShape b;
  b.microbatch_tokens = p.microbatch_sequences * a.sequence_length;
  b.microbatches = p.global_batch_tokens / (b.microbatch_tokens * p.dp());
  return b;
}

std::vector<std::int64_t> virtual_stage_layer_counts(const ParallelPlan& p, const Architecture& a) {
  if (!p.pp_layer_split.empty()) return p.pp_layer_split;
  // ceil(L / (P v)) layers per virtual stage; the shortfall lands on the last one, which also
  // runs the LM head (an uneven last stage), while every virtual stage keeps at least one layer.
  const std::int64_t parts = p.pp * p.model_chunks();
  std::vector<std::int64_t> out;
  const std::int64_t per = (a.num_layers + parts - 1) / parts;
  std::int64_t left = a.num_layers;
  for (std::int64_t s = 0; s < parts; ++s) {
    const std::int64_t n = std::min(per, left - (parts - 1 - s));
    out.push_back(n);
    left -= n;
  }
  return out;
}

std::vector<std::int64_t> stage_layer_counts(const ParallelPlan& p, const Architecture& a) {
  const auto virt = virtual_stage_layer_counts(p, a);
  std::vector<std::int64_t> out(static_cast<std::size_t>(p.pp), 0);
  for (std::size_t j = 0; j < virt.size(); ++j)
    out[static_cast<std::size_t>(place_of_virtual_stage(p, static_cast<std::int64_t>(j)).stage)] += virt[j];
  return out;
}

LayerPlace place_of_virtual_stage(const ParallelPlan& p, std::int64_t j) {
  if (p.model_chunks() == 2 && p.v_shape()) return j < p.pp ? LayerPlace{j, 0} : LayerPlace{2 * p.pp - 1 - j, 1};
  return {j % p.pp, j / p.pp};
}

std::int64_t virtual_stage_of(const ParallelPlan& p, std::int64_t stage, std::int64_t chunk) {
  if (p.model_chunks() == 2 && p.v_shape()) return chunk == 0 ? stage : 2 * p.pp - 1 - stage;
  return chunk * p.pp + stage;
}

LayerPlace place_of_layer(const ParallelPlan& p, const Architecture& a, std::int64_t layer) {
  const auto virt = virtual_stage_layer_counts(p, a);
  const auto parts = static_cast<std::int64_t>(virt.size());
  std::int64_t j = parts - 1;
  if (layer < 0) {
    j = 0;
  } else if (layer < a.num_layers) {
    std::int64_t first = 0;
    for (std::int64_t k = 0; k < parts; ++k) {
      first += virt[static_cast<std::size_t>(k)];
      if (layer < first) {
        j = k;
        break;
      }
    }
  }
  return place_of_virtual_stage(p, j);
}

std::vector<LayerPlace> layer_places(const ParallelPlan& p, const Architecture& a) {
  const auto virt = virtual_stage_layer_counts(p, a);
  std::vector<LayerPlace> out;
  out.reserve(static_cast<std::size_t>(a.num_layers) + 2);
  out.push_back({0, 0});  // the embedding runs on the first virtual stage
  for (std::size_t j = 0; j < virt.size(); ++j) {
    const LayerPlace at = place_of_virtual_stage(p, static_cast<std::int64_t>(j));
    for (std::int64_t n = 0; n < virt[j] && static_cast<std::int64_t>(out.size()) <= a.num_layers; ++n)
      out.push_back(at);
  }
  const LayerPlace last = place_of_virtual_stage(p, static_cast<std::int64_t>(virt.size()) - 1);
  while (static_cast<std::int64_t>(out.size()) < a.num_layers + 2) out.push_back(last);
  return out;
}

}  // namespace moesim
