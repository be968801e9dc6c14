#include "models/plan/parallel_plan.hpp"

#include <algorithm>

#include "models/arch/architecture.hpp"
#include "models/common/json_reader.hpp"
#include "models/moe/measured_loads.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/pipeline_layout.hpp"
#include "models/stacks/stack_preset.hpp"

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

namespace {
constexpr double kMaxCount = 1 << 24;

// A list of Megatron-Core module names at `key` as a set, refused when empty (`instead`: what to
// write for none).
template <class E, std::size_t N>
EnumSet<E> module_set(const JsonReader& in, std::string_view key, const EnumNames<E, N>& names,
                      const std::string& instead) {
  EnumSet<E> out;
  for (const std::string& m : in.choice_list(key, names.names())) out.add(names.parse(m));
  if (out.empty()) in.fail(key, "is empty; allowed: one or more modules, or " + instead);
  return out;
}

DType parse_dtype(const JsonReader& in, std::string_view key, DType fallback) {
  return in.choice_of(key, kDTypeNames, fallback);
}

OptimizerSpec parse_optimizer(const JsonReader& in, const DesignDefaults& defaults) {
  OptimizerSpec o;
  o.kernels = in.choice_of("implementation", kOptimizerKernelsNames, defaults.optimizer_kernels);
  o.kind = in.choice_of("type", kOptimizerKindNames, OptimizerKind::adamw);
  o.main_weight_dtype = parse_dtype(in, "main_weight_dtype", DType::fp32);
  o.state_dtype = parse_dtype(in, "state_dtype", DType::fp32);
  o.layout = in.choice_of("layout", kShardLayoutNames, defaults.optimizer_layout);
  o.min_shard_numel = in.integer_or("min_shard_numel", o.min_shard_numel, Range::at_least(1));
  o.foreach_chunk_numel = in.integer_or("foreach_chunk_numel", o.foreach_chunk_numel, Range::at_least(1));
  o.rebuild = in.choice_of("weight_rebuild", kWeightRebuildNames, WeightRebuild::coalesced_copy);
  in.finish();
  return o;
}

PrecisionSpec parse_precision(const JsonReader& in, const DesignDefaults& defaults) {
  PrecisionSpec p;
  p.compute = parse_dtype(in, "compute_dtype", DType::bf16);
  p.grad_accum = parse_dtype(in, "grad_accum_dtype", DType::fp32);
  p.reduce = parse_dtype(in, "reduce_dtype", DType::fp32);
  if (auto l = in.optional_object("linears")) {
    for (std::size_t c = 0; c < kLinearClasses; ++c) {
      const std::string_view key = name_of(static_cast<LinearClass>(c));
      p.linears[c] = l->choice_of(key, kGemmPrecisionNames, GemmPrecision::bf16);
    }
    l->finish();
  }
  p.ep_dispatch = in.choice_of("ep_dispatch", kGemmPrecisionNames, GemmPrecision::bf16);
  p.attention = in.choice_of("attention", kGemmPrecisionNames, GemmPrecision::bf16);
  p.weight_caches = in.boolean_or("weight_caches", defaults.weight_caches);
  p.library = in.choice_of("library", kLowPrecisionLibraryNames, LowPrecisionLibrary::torchao);
  in.finish();
  return p;
}
// FSDP1's options (torch.distributed.fsdp.FullyShardedDataParallel's arguments), refused under
// FSDP2, which has none of them; and FSDP2's prefetch depth refused under FSDP1, whose rate
// limiter and backward prefetch keep one unit gathered ahead.
void parse_fsdp1_options(const JsonReader& f, ParallelPlan& p) {
  const bool fsdp1 = p.fsdp_implementation == FsdpImplementation::fsdp1;
  for (const char* key : {"backward_prefetch", "limit_all_gathers"}) {
    if (!fsdp1 && f.has(key))
      f.fail(key, "an FSDP1 option; it takes plan.fsdp.implementation \"fsdp1\" (FSDP2 has no such argument)");
  }
  if (fsdp1 && f.has("prefetch_depth"))
    f.fail("prefetch_depth",
           "FSDP2's option; FSDP1 gathers one unit ahead (its all-gather rate limiter, plan.fsdp.backward_prefetch)");
  p.fsdp_backward_prefetch = f.choice_of("backward_prefetch", kBackwardPrefetchNames, BackwardPrefetch::backward_pre);
  // torch's default and Composer's; without the limiter the host issues every gather as far
  // ahead as it runs, which no replay here bounds.
  if (!f.boolean_or("limit_all_gathers", true))
    f.fail("limit_all_gathers",
           "FSDP1 without its all-gather rate limiter is not modelled; allowed: true (torch's default)");
}
// plan.pipeline.layout: the decoder layers of each virtual stage, and the virtual stages.
void read_pipeline_layout(const JsonReader& pp, ParallelPlan& p) {
  p.pp_megatron.layout = pp.string("layout");
  if (!p.pp_layer_split.empty())
    pp.fail("layout", "is given with pipeline.layer_split; allowed: one of them (both say the layers of each stage)");
  const PipelineLayout layout = parse_pipeline_layout(p.pp_megatron.layout);
  if (!layout.error.empty()) pp.fail("layout", "\"" + p.pp_megatron.layout + "\" " + layout.error);
  p.pp_megatron.layout_mtp_layers = layout_mtp_layers(layout);
  const auto stages = static_cast<std::int64_t>(layout.stages.size());
  if (stages % p.pp != 0) {
    pp.fail("layout", "has " + std::to_string(stages) + " stages; allowed: a multiple of pipeline.degree " +
                          std::to_string(p.pp) + " (PP x virtual stages)");
  }
  // With a V-shape schedule each stage holds two chunks whatever virtual_stages says.
  const std::int64_t chunks = stages / p.pp;
  if (pp.has("virtual_stages") && p.pp_virtual != chunks && !(p.v_shape() && chunks == 2)) {
    pp.fail("layout", "has " + std::to_string(stages) + " stages, " + std::to_string(chunks) +
                          " per pipeline rank, against pipeline.virtual_stages " + std::to_string(p.pp_virtual) +
                          "; allowed: virtual_stages left out (the layout sets it) or equal");
  }
  if (!p.v_shape()) p.pp_virtual = chunks;
  p.pp_layer_split = layout_decoder_layers(layout);
}

// Megatron-Core's uneven split keys (pipeline_layout.hpp; transformer_config.py refuses them
// beside a layout, and the first/last counts beside the embedding or loss counted as layers).
void read_uneven_split(const JsonReader& pp, ParallelPlan& p) {
  MegatronSplit& m = p.pp_megatron;
  m.first_stage_layers = pp.integer_or("first_stage_layers", 0, Range::between(1, 4096));
  m.last_stage_layers = pp.integer_or("last_stage_layers", 0, Range::between(1, 4096));
  m.account_for_embedding = pp.boolean_or("account_for_embedding", false);
  m.account_for_loss = pp.boolean_or("account_for_loss", false);
  if (!m.uneven()) return;
  const std::string_view key = m.uneven_key();
  if (!m.layout.empty() || !p.pp_layer_split.empty())
    pp.fail(key, std::string("is given with pipeline.") + (m.layout.empty() ? "layer_split" : "layout") +
                     "; allowed: one way to place the layers (Megatron-Core refuses the same)");
  if ((m.first_stage_layers > 0 || m.last_stage_layers > 0) && (m.account_for_embedding || m.account_for_loss))
    pp.fail(key,
            "is given with account_for_embedding or account_for_loss; allowed: the first/last stage counts or "
            "the embedding and loss counted as layers, not both (transformer_config.py)");
}

}  // namespace

ParallelPlan parse_plan(const JsonReader& in) {
  ParallelPlan p;
  in.string_or("name", "");
  in.string_or("description", "");
  p.design = in.choice_in("design", design_words());
  // The training stack's values were written into the plan before this parse (apply_stack, which
  // the composed scenario keeps as Scenario::stack); here its name is only checked.
  if (in.has("stack")) in.choice_in("stack", stack_presets().names());
  // What the design decides when the plan does not (each entry cites its stack's code).
  const DesignDefaults defaults = design_defaults(p.design);
  p.nodes = in.integer("nodes", Range::between(1, kMaxCount));
  p.gpus_per_node = in.integer("gpus_per_node", Range::between(1, 1024));
  if (auto pp = in.optional_object("pipeline")) {
    p.pp = pp->integer_or("degree", 1, Range::between(1, kMaxCount));
    p.pp_schedule = pp->choice_of("schedule", kPipelineScheduleNames, PipelineSchedule::one_f_one_b);
    p.pp_virtual = pp->integer_or("virtual_stages", 1, Range::between(1, 64));
    p.pp_layer_split = pp->integer_list_or("layer_split", Range::between(0, 4096));
    if (pp->has("layout")) read_pipeline_layout(*pp, p);
    read_uneven_split(*pp, p);
    pp->finish();
  }
  if (auto tp = in.optional_object("tensor_parallel")) {
    p.tp = tp->integer_or("degree", 1, Range::between(1, 1024));
    p.sequence_parallel = tp->boolean_or("sequence_parallel", true);
    p.tp_comm_overlap = tp->boolean_or("comm_overlap", false);
    tp->finish();
  }
  if (auto cp = in.optional_object("context_parallel")) {
    p.cp = cp->integer_or("degree", 1, Range::between(1, 1024));
    p.cp_variant = cp->choice_of("variant", kCpVariantNames, CpVariant::ring);
    cp->finish();
  }
  if (auto ep = in.optional_object("expert_parallel")) {
    p.ep = ep->integer_or("degree", 1, Range::between(1, kMaxCount));
    p.etp = ep->integer_or("tensor_degree", 1, Range::between(1, 1024));
    p.ep_transport = ep->choice_of("transport", kEpTransportNames, defaults.ep_transport);
    p.ep_sms = ep->integer_or("sms", 0, Range::between(1, 1024));
    p.ep_buffer_capacity_factor = ep->number_or("buffer_capacity_factor", 1.25, Range::between(0.01, 1024));
    p.ep_buffers_shared = ep->boolean_or("shared_buffers", false);
    p.ep_a2a_overlap = ep->boolean_or("a2a_overlap", false);
    p.ep_delay_wgrad = ep->boolean_or("delay_wgrad", false);
    // Below 1 every step would be over budget and rerun (paged_stash.py's runner).
    p.routing.rank_capacity_factor = ep->number_or("rank_capacity_factor", 0, Range::between(1, 64));
    if (ep->has("pxn")) p.ep_pxn = ep->boolean("pxn") ? PxnChoice::on : PxnChoice::off;
    ep->finish();
  } else {
    p.ep_transport = defaults.ep_transport;
  }
  if (auto f = in.optional_object("fsdp")) {
    p.fsdp_shard = f->integer_or("shard_degree", 0, Range::between(0, kMaxCount));
    p.fsdp_prefetch = f->integer_or("prefetch_depth", 1, Range::between(0, 8));
    // The flag when given; else the policy's answer for this plan.
    const auto policy = f->choice_of("reshard_after_forward_policy", kReshardPolicyNames, ReshardPolicy::always);
    const bool by_policy = policy == ReshardPolicy::always || (policy == ReshardPolicy::unless_pipelined && p.pp == 1);
    p.fsdp_reshard_after_forward = f->boolean_or("reshard_after_forward", by_policy);
    p.fsdp_implementation = f->choice_of("implementation", kFsdpImplementationNames, FsdpImplementation::fsdp2);
    parse_fsdp1_options(*f, p);
    f->finish();
  }
  if (auto d = in.optional_object("ddp")) {
    p.distributed_optimizer = d->boolean_or("distributed_optimizer", true);
    p.bucket_cap_bytes = d->number_or("bucket_cap_MiB", 250.0, Range::positive()) * kMiB;
    p.grad_sync = d->choice_of("grad_sync", kGradSyncNames, GradSync::all_reduce);
    p.overlap_grad_reduce = d->boolean_or("overlap_grad_reduce", true);
    p.overlap_param_gather = d->boolean_or("overlap_param_gather", false);
    p.grad_accumulation_fusion = d->boolean_or("grad_accumulation_fusion", false);
    d->finish();
  }
  if (auto o = in.optional_object("optimizer")) {
    p.optimizer = parse_optimizer(*o, defaults);
  } else {
    p.optimizer.kernels = defaults.optimizer_kernels;
    p.optimizer.layout = defaults.optimizer_layout;
  }
  if (auto pr = in.optional_object("precision")) {
    p.precision = parse_precision(*pr, defaults);
  } else {
    p.precision.weight_caches = defaults.weight_caches;
  }
  // Which library kernels the stack calls; each is priced from the profile's rates for it.
  if (auto k = in.optional_object("kernels")) {
    p.attention_kernel = k->choice_of("attention", kAttentionKernelNames, AttentionKernel::profile);
    p.pointwise_kernels = k->choice_of("pointwise", kPointwiseKernelsNames, PointwiseKernels::fused);
    p.expert_probs = k->choice_of("expert_probs", kExpertProbsNames, ExpertProbs::combine);
    k->finish();
  }
  const auto batch = in.object("batch");
  p.microbatch_sequences = batch.integer("rank_microbatch_sequences", Range::between(1, kMaxCount));
  p.global_batch_tokens = batch.integer("global_batch_tokens", Range::between(1, 1e15));
  batch.finish();
  if (auto act = in.optional_object("activations")) {
    p.recompute = act->choice_of("recompute", kRecomputeNames, Recompute::none);
    if (act->has("recompute_num_layers")) {
      p.recompute_num_layers = act->integer("recompute_num_layers", Range::between(1, 4096));
      if (p.recompute != Recompute::full) {
        act->fail("recompute_num_layers",
                  "recomputes the first N layers of each model chunk (Megatron-Core's "
                  "recompute_method \"block\"), so recompute must be \"full\" (it is \"" +
                      std::string(name_of(p.recompute)) + "\"); allowed: remove it");
      }
    }
    if (act->has("recompute_modules")) {
      p.recompute_modules =
          module_set(*act, "recompute_modules", kRecomputeModuleNames, "recompute \"none\" to recompute nothing");
      if (p.recompute != Recompute::selective) {
        act->fail("recompute_modules",
                  "lists Megatron-Core's selective recompute modules, so recompute must be "
                  "\"selective\" (it is \"" +
                      std::string(name_of(p.recompute)) + "\"); allowed: remove the list");
      }
    }
    if (act->has("offload_modules")) {
      p.offload_modules =
          module_set(*act, "offload_modules", kOffloadModuleNames, "remove the list to offload nothing");
    }
    p.loss = act->choice_of("loss", kLossImplNames, LossImpl::standard);
    p.compiled_blocks = act->boolean_or("compiled_blocks", false);
    // The CUDA stash's size factor defaults to Megatron-Core's (transformer_config.py
    // moe_paged_stash_buffer_size_factor_cuda = 1.10).
    // Its pinned host pages: moe_paged_stash_buffer_size_factor_cpu (default 0, none).
    if (act->boolean_or("moe_paged_stash", false)) {
      p.routing.paged_stash_factor = act->number_or("moe_paged_stash_cuda_factor", 1.10, Range::between(0.01, 64));
      p.routing.paged_stash_host_factor = act->number_or("moe_paged_stash_cpu_factor", 0, Range::between(0, 64));
    }
    for (const char* key : {"moe_paged_stash_cuda_factor", "moe_paged_stash_cpu_factor"})
      if (p.routing.paged_stash_factor == 0 && act->has(key))
        act->fail(key, "sizes the paged stash; allowed with moe_paged_stash true");
    act->finish();
  }
  if (auto al = in.optional_object("allocator")) {
    p.allocator.model = al->choice_of("model", kAllocatorModelNames, AllocatorModel::pytorch_caching);
    p.allocator.expandable_segments = al->boolean_or("expandable_segments", false);
    al->finish();
  }
  if (auto r = in.optional_object("routing")) {
    p.routing.kind = r->choice_of("model", kRoutingKindNames, RoutingKind::uniform);
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
  // Each rank runs its 1/CP share of every sequence.
  b.microbatch_tokens = p.microbatch_sequences * a.sequence_length / p.cp;
  b.microbatches = p.global_batch_tokens / (b.microbatch_tokens * p.dp());
  return b;
}

std::vector<std::int64_t> virtual_stage_layer_counts(const ParallelPlan& p, const Architecture& a) {
  if (!p.pp_layer_split.empty()) return p.pp_layer_split;
  if (p.pp_megatron.uneven()) {
    StageSplit split = megatron_stage_split(p.pp_megatron, a.num_layers, p.pp, p.model_chunks());
    if (split.error.empty()) return std::move(split.layers);  // validate_plan refuses the others
  }
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
