// Plan facts that depend on the model (divisibility, stage split, schedules, microbatch count):
// the checks behind validate_plan, each naming the plan path at fault and what is allowed.
#include <algorithm>

#include "models/arch/architecture.hpp"
#include "models/common/errors.hpp"
#include "models/moe/measured_loads.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/pipeline_layout.hpp"
#include "models/plan/sync_free.hpp"

namespace moesim {

namespace {
std::string s(std::int64_t v) { return std::to_string(v); }

// Tensor parallelism splits heads, KV groups and hidden widths over the TP ranks (Megatron-Core's
// divisibility checks in megatron/training/arguments.py and transformer_config.py); a KV group
// count below the degree is replicated, each rank holding one group (TP > num_query_groups).
template <class Fail>
void check_tensor_parallel(const ParallelPlan& p, const Architecture& a, const Fail& fail) {
  const std::int64_t t = p.tp;
  if (p.world() % (p.pp * t) != 0) {
    fail("tensor_parallel.degree",
         "world size " + s(p.world()) + " is not divisible by PP x TP = " + s(p.pp) + " x " + s(t));
  }
  if (p.tp_comm_overlap && !p.sequence_parallel) {
    // Megatron-LM arguments.py: "Tensor parallel communication/GEMM overlap can happen only when
    // sequence parallelism is enabled".
    fail("tensor_parallel.comm_overlap",
         "overlaps the all-gathers and reduce-scatters of sequence parallelism; "
         "allowed: false, or sequence_parallel true");
  }
  const PlanRule rule = tensor_parallel_rule(a, t, p.sequence_parallel);
  if (!rule.path.empty()) fail(rule.path, rule.message);
}

// Context parallelism splits each sequence into 2 x CP chunks (Megatron-Core's load-balanced
// causal split) over CP ranks that hold the same TP shard; the all-to-all variant splits the
// rank's heads over CP instead during the attention.
template <class Fail>
void check_context_parallel(const ParallelPlan& p, const Architecture& a, const Fail& fail) {
  const std::string cp = "context_parallel.degree";
  if (p.world() % (p.pp * p.tp * p.cp) != 0) {
    fail(cp, "world size " + s(p.world()) + " is not divisible by PP x TP x CP = " + s(p.pp) + " x " + s(p.tp) + " x " +
                 s(p.cp));
  }
  if (const PlanRule rule = context_parallel_rule(a, p.cp); !rule.path.empty()) fail(rule.path, rule.message);
  if (p.cp_variant == CpVariant::all_to_all) {
    const std::int64_t heads = a.attention.num_heads / p.tp;
    const std::int64_t kv = std::max<std::int64_t>(1, a.attention.key_heads() / p.tp);
    if (heads % p.cp != 0 || kv % p.cp != 0) {
      fail("context_parallel.variant", "\"all_to_all\" gives each CP rank a share of the heads: " + s(heads) +
                                           " heads and " + s(kv) + " KV heads per TP rank do not divide by CP " +
                                           s(p.cp) + "; allowed: \"ring\", or a CP degree dividing both");
    }
  }
}

// Fine-grained activation offloading (offload_modules.hpp) moves what a block saves under
// recompute none or selective (Megatron-Core transformer_config.py __post_init__ checks), and
// each listed module must save something in this architecture.
template <class Fail>
void check_offload(const ParallelPlan& p, const Architecture& a, const Fail& fail) {
  const std::string path = "activations.offload_modules";
  const OffloadModules& m = p.offload_modules;
  if (p.recompute == Recompute::full || p.recompute == Recompute::selective_op) {
    fail(path, "moves the tensors a block saves for its backward; under recompute \"" +
                   std::string(name_of(p.recompute)) +
                   "\" a block saves its checkpoint only; allowed: recompute \"none\" or \"selective\"");
  }
  if (m.has(OffloadModule::attn_proj) && !m.has(OffloadModule::core_attn)) {
    fail(path,
         "\"attn_proj\" cannot be offloaded without \"core_attn\": its input is the core attention's "
         "output, which the core attention's backward reads too (Megatron-Core); allowed: add core_attn");
  }
  const bool attention = a.has_mixer(Mixer::attention), moe = a.has_ffn(Ffn::moe);
  const bool mla = attention && a.attention.kind == AttentionKind::mla;
  for (const auto& [module, name] : kOffloadModuleNames.entries()) {
    if (!m.has(module)) continue;
    std::string why;
    if (module == OffloadModule::attn_norm && !mla) {
      why =
          "the attention's input norm is fused into the QKV projection (Transformer Engine's LayerNormLinear; "
          "an IdentityOp in Megatron-Core) except in MLA layers, which this model has none of";
    } else if ((module == OffloadModule::qkv_linear || module == OffloadModule::core_attn ||
                module == OffloadModule::attn_proj) &&
               !attention) {
      why = "this model has no attention layers";
    } else if ((module == OffloadModule::mlp_norm || module == OffloadModule::expert_fc1 ||
                module == OffloadModule::moe_act) &&
               !moe) {
      why =
          "it moves an MoE layer's tensors (a dense MLP's norm is fused into its fc1), and this model has no MoE "
          "layers";
    } else if ((module == OffloadModule::expert_fc1 || module == OffloadModule::moe_act) &&
               p.recompute_modules.has(RecomputeModule::moe)) {
      why =
          "recompute module \"moe\" checkpoints the whole MoE layer, which then saves nothing inside it "
          "(Megatron-Core refuses the pair)";
    } else if (module == OffloadModule::core_attn && p.attention_kernel == AttentionKernel::unfused) {
      why =
          "the unfused core attention's saved probabilities are not modeled as an offload group; allowed with a "
          "fused attention kernel";
    }
    if (!why.empty()) fail(path, "\"" + std::string(name) + "\" moves nothing here: " + why);
  }
}
}  // namespace

PlanRule expert_parallel_rule(const Architecture& a, std::int64_t ep, std::int64_t etp) {
  if (ep > 1) {
    const std::string path = "expert_parallel.degree";
    if (!a.moe) return {path, "EP degree " + s(ep) + " needs an MoE architecture"};
    if (a.moe->num_experts % ep != 0)
      return {path, "EP-MP degree " + s(ep) + " does not divide the " + s(a.moe->num_experts) + " routed experts"};
  }
  if (etp > 1) {
    const std::string path = "expert_parallel.tensor_degree";
    if (!a.moe) return {path, "expert TP " + s(etp) + " needs an MoE architecture"};
    if (a.moe->expert_hidden % etp != 0)
      return {path, "expert TP " + s(etp) + " does not divide the expert hidden size " + s(a.moe->expert_hidden)};
  }
  return {};
}

PlanRule ep_a2a_overlap_rule(std::int64_t pp, std::string_view schedule, std::string_view recompute) {
  const std::string path = "expert_parallel.a2a_overlap";
  if (pp > 1 && schedule != name_of(PipelineSchedule::interleaved_1f1b)) {
    return {path,
            "true with a pipeline needs pipeline.schedule \"interleaved_1f1b\" (Megatron-Core: virtual pipeline "
            "stages must be set when PP > 1); now \"" +
                std::string(schedule) + "\""};
  }
  if (recompute == name_of(Recompute::full)) {
    return {path,
            "true cannot run with activations.recompute \"full\" (Megatron-Core: 'disable full recomputation "
            "when enabling overlap_moe_expert_parallel_comm')"};
  }
  return {};
}

PlanRule context_parallel_rule(const Architecture& a, std::int64_t cp) {
  const std::string path = "context_parallel.degree";
  if (a.sequence_length % (2 * cp) != 0) {
    return {path, "the sequence length " + s(a.sequence_length) + " does not split into 2 x CP = " + s(2 * cp) +
                      " equal chunks (the load-balanced causal split)"};
  }
  if (cp > 1 && a.has_mixer(Mixer::mamba)) {
    return {path,
            "context parallelism is modeled for attention layers; this architecture has Mamba-2 layers, whose scan "
            "passes its state along the sequence (allowed: degree 1)"};
  }
  return {};
}

PlanRule tensor_parallel_rule(const Architecture& a, std::int64_t t, bool sequence_parallel) {
  const std::string tp = "tensor_parallel.degree";
  if (a.attention.num_heads % t != 0)
    return {tp, "TP degree " + s(t) + " does not divide the " + s(a.attention.num_heads) + " attention heads"};
  const std::int64_t kv = a.attention.key_heads();
  if (kv % t != 0 && t % kv != 0) {
    return {tp, "TP degree " + s(t) + " and the " + s(kv) +
                    " KV heads: allowed when one divides the other (KV heads are replicated when TP exceeds them)"};
  }
  if (a.mamba && (a.mamba->num_heads % t != 0 || a.mamba->groups % t != 0)) {
    return {tp, "TP degree " + s(t) + " does not divide the Mamba-2 mixer's " + s(a.mamba->num_heads) + " heads and " +
                    s(a.mamba->groups) + " groups (Megatron-Core MambaMixer splits both)"};
  }
  if (a.has_ffn(Ffn::dense) && a.dense_hidden % t != 0)
    return {tp, "TP degree " + s(t) + " does not divide the dense MLP hidden size " + s(a.dense_hidden)};
  if (!a.moe) return {};
  if (a.moe->shared_experts > 0 && a.moe->shared_hidden % t != 0)
    return {tp, "TP degree " + s(t) + " does not divide the shared expert hidden size " + s(a.moe->shared_hidden)};
  if (!sequence_parallel) {
    // Megatron-LM megatron/training/arguments.py: "When using MoE and tensor parallelism,
    // sequence parallelism must be used."; each TP rank routes its sequence shard.
    return {"tensor_parallel.sequence_parallel",
            "an MoE model with TP > 1 needs sequence parallelism (each TP rank routes its share of the sequence, as "
            "Megatron-Core requires); allowed: true"};
  }
  return {};
}

void validate_plan(const ParallelPlan& p, const Architecture& a, const std::string& file, const std::string& prefix) {
  auto fail = [&](const std::string& path, const std::string& msg) {
    throw InputError(file, prefix.empty() ? path : prefix + "." + path, msg, /*infeasible=*/true);
  };
  if (p.world() % p.pp != 0) {
    fail("pipeline.degree",
         "world size " + s(p.world()) + " (nodes x gpus_per_node) is not divisible by PP degree " + s(p.pp));
  }
  if (p.tp > 1) check_tensor_parallel(p, a, fail);
  if (p.cp > 1) check_context_parallel(p, a, fail);
  if (!p.offload_modules.empty()) check_offload(p, a, fail);
  // The even split needs a layer a virtual stage; a given split may leave stages empty.
  if (p.pp * p.model_chunks() > a.num_layers && p.pp_layer_split.empty() && !p.pp_megatron.uneven()) {
    fail("pipeline.degree", "PP stages x virtual stages = " + s(p.pp * p.model_chunks()) + " exceeds the " +
                                s(a.num_layers) + " layers of the model");
  }
  const GemmPrecision experts = p.precision.linear(LinearClass::routed_expert);
  if (p.precision.ep_dispatch != GemmPrecision::bf16 && p.precision.ep_dispatch != experts) {
    std::string msg = "\"";
    msg += name_of(p.precision.ep_dispatch);
    msg += "\" rows feed the routed experts' GEMMs as they arrive, so precision.linears.routed_expert must be \"";
    msg += name_of(p.precision.ep_dispatch);
    msg += "\" too (it is \"";
    msg += name_of(experts);
    msg += "\"); allowed: bf16 or the routed experts' format";
    fail("precision.ep_dispatch", msg);
  }
  if (p.v_shape() && p.pp_virtual > 2) {
    // A V has exactly two chunks per stage (ScheduleZBVZeroBubble: "requires exactly two stages per rank").
    fail("pipeline.virtual_stages", "schedule \"" + std::string(name_of(p.pp_schedule)) + "\" runs exactly 2 model " +
                                        "chunks per stage (a V); allowed: 1 (the default) or 2, got " +
                                        s(p.pp_virtual));
  }
  // A layout (pipeline_layout.hpp) sets the virtual stages and the split: its faults are its own.
  const bool layout = !p.pp_megatron.layout.empty();
  const std::string virtual_key = layout ? "pipeline.layout" : "pipeline.virtual_stages";
  if (p.pp_virtual > 1 && p.pp_schedule != PipelineSchedule::interleaved_1f1b && !p.v_shape()) {
    fail(virtual_key, "virtual stages > 1 need schedule \"interleaved_1f1b\" (any count) or a " +
                          std::string("V-shape one, \"1f1b_v\" or \"zbv\" (2)") +
                          (layout ? "; the layout has " + s(p.pp_virtual) + " stages per pipeline rank" : ""));
  }
  if (p.pp_virtual > 1 && p.pp == 1) {
    // Interleaving sends activations between the chunks of different stages; one stage has none.
    fail(virtual_key, "virtual stages > 1 need pipeline.degree >= 2 (got 1)");
  }
  if (!p.pp_layer_split.empty()) {
    const std::string key = layout ? "pipeline.layout" : "pipeline.layer_split";
    if (static_cast<std::int64_t>(p.pp_layer_split.size()) != p.pp * p.model_chunks()) {
      fail(key, "has " + s(static_cast<std::int64_t>(p.pp_layer_split.size())) + (layout ? " stages" : " entries") +
                    "; allowed: one per virtual stage (PP x model chunks = " + s(p.pp * p.model_chunks()) + ")");
    }
    std::int64_t sum = 0;
    for (auto v : p.pp_layer_split) sum += v;
    if (sum != a.num_layers) {
      fail(key, (layout ? "holds " + s(sum) + " decoder layers t" : "sums to " + s(sum)) + "; must equal num_layers " +
                    s(a.num_layers));
    }
    if (layout && p.pp_megatron.layout_mtp_layers != a.mtp_layers) {
      fail(key, "holds " + s(p.pp_megatron.layout_mtp_layers) +
                    " MTP layers m; must equal the architecture's mtp.num_layers " + s(a.mtp_layers));
    }
  }
  if (p.pp_megatron.uneven()) {
    const MegatronSplit& m = p.pp_megatron;
    const std::string key = "pipeline." + std::string(m.uneven_key());
    if (p.pp == 1) fail(key, "places layers on pipeline stages; allowed with pipeline.degree >= 2 (got 1)");
    if (p.v_shape()) {
      fail(key,
           "is Megatron-Core's uneven split, for its schedules (1f1b, interleaved_1f1b) and zb_h1; a V-shape "
           "schedule takes pipeline.layer_split");
    }
    const StageSplit split = megatron_stage_split(m, a.num_layers, p.pp, p.model_chunks());
    if (!split.error.empty()) fail("pipeline." + split.key, split.error);
  }
  const bool plain_blocks = !a.has_ffn(Ffn::moe) && !a.has_mixer(Mixer::mamba) && !a.has_ffn(Ffn::none) &&
                            a.attention.kind == AttentionKind::gqa && a.mlp.gated();
  if (p.recompute == Recompute::selective_op && !plain_blocks) {
    // torchtitan's op list names aten.mm and SDPA only; what it does inside an MoE block (grouped
    // GEMMs, the all-to-alls) is not modeled.
    fail("activations.recompute",
         "\"selective_op\" (torchtitan's op-level checkpointing) is modeled for GQA attention + gated MLP blocks only; "
         "this architecture has MoE, Mamba-2, MLA, non-gated or mixer-less layers (allowed here: none, full, "
         "selective)");
  }
  if (p.recompute_modules.has(RecomputeModule::mla_up_proj) && a.attention.kind != AttentionKind::mla) {
    // Megatron-Core transformer_config.py: "mla_up_proj in recompute_modules is only supported with
    // multi_latent_attention".
    fail("activations.recompute_modules",
         "\"mla_up_proj\" recomputes multi-latent attention's up projections; "
         "this architecture's attention is not MLA (allowed: the other modules)");
  }
  if (p.recompute_modules.has(RecomputeModule::moe) && p.ep > 1) {
    fail("activations.recompute_modules",
         "\"moe\" recomputes an MoE layer whole, its EP dispatch and combine again in the backward, which is not "
         "modeled; allowed with expert_parallel.degree 1, or moe_act / shared_experts");
  }
  if (p.attention_kernel == AttentionKernel::unfused) {
    // Megatron-Core's context parallelism runs Transformer Engine's fused attention per KV chunk;
    // torchtitan's op-level checkpointing keeps flash attention's outputs.
    if (p.cp > 1)
      fail("kernels.attention",
           "\"unfused\" with context parallelism is not modeled (CP's ring runs a fused attention kernel per KV "
           "chunk); allowed with context_parallel.degree > 1: a fused kernel (profile, cudnn, flash_attn_2, ...)");
    if (p.recompute == Recompute::selective_op)
      fail("kernels.attention",
           "\"unfused\" with activations.recompute \"selective_op\" is not modeled (torchtitan's op list saves "
           "flash attention's outputs); allowed here: a fused kernel, or recompute none, full or selective");
  }
  if (p.ep_delay_wgrad && !p.ep_a2a_overlap) {
    fail("expert_parallel.delay_wgrad",
         "needs expert_parallel.a2a_overlap true (Megatron-Core transformer_config.py: "
         "'overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute'); set both, or "
         "delay_wgrad false");
  }
  if (p.ep > 1) {
    if (const PlanRule rule = expert_parallel_rule(a, p.ep); !rule.path.empty()) fail(rule.path, rule.message);
    if (p.ep_a2a_overlap) {
      if (const PlanRule rule = ep_a2a_overlap_rule(p.pp, name_of(p.pp_schedule), name_of(p.recompute));
          !rule.path.empty())
        fail(rule.path, rule.message);
    }
    if (p.ep_sms > 0 && p.ep_transport != EpTransport::hybridep) {
      fail("expert_parallel.sms",
           "the SMs of the EP transport are modelled for \"hybridep\" (whose rate the profile has by SMs); \"" +
               std::string(name_of(p.ep_transport)) +
               "\" runs at its profile's own setting: remove the key or set expert_parallel.transport \"hybridep\"");
    }
    if (p.ep_transport == EpTransport::nccl_all_gather) {
      // Megatron-Core's all-gather dispatcher gathers over the expert-TP x EP group at once, and
      // gathers the hidden states as they are (no FP8 dispatch path).
      if (p.etp > 1)
        fail("expert_parallel.transport",
             "\"nccl_all_gather\" with expert_parallel.tensor_degree > 1 is not modeled (the dispatcher gathers over "
             "the ETP x EP group at once); allowed with expert TP: nccl_all_to_all, symmetric_memory, deepep");
      if (p.precision.ep_dispatch != GemmPrecision::bf16)
        fail("precision.ep_dispatch",
             "\"" + std::string(name_of(p.precision.ep_dispatch)) +
                 "\" dispatch with expert_parallel.transport \"nccl_all_gather\" is not modeled (the all-gather "
                 "dispatcher gathers the hidden states in the compute dtype); allowed: bf16");
    }
    if (p.stage_ranks() % (p.ep * p.etp) != 0) {
      fail("expert_parallel.degree", "EP-MP degree " + s(p.ep) + " x expert TP " + s(p.etp) + " does not divide the " +
                                         s(p.stage_ranks()) + " ranks of a pipeline stage (TP " + s(p.tp) + " x DP " +
                                         s(p.dp()) + ")");
    }
  }
  if (p.etp > 1) {
    if (const PlanRule rule = expert_parallel_rule(a, 1, p.etp); !rule.path.empty()) fail(rule.path, rule.message);
    if (p.stage_ranks() % (p.ep * p.etp) != 0) {
      fail("expert_parallel.tensor_degree", "EP-MP " + s(p.ep) + " x expert TP " + s(p.etp) + " does not divide the " +
                                                s(p.stage_ranks()) + " ranks of a pipeline stage");
    }
  }
  if (PlanRule rule = sync_free_rule(p, a); !rule.path.empty()) fail(rule.path, rule.message);
  if (p.routing.kind == RoutingKind::measured) {
    if (!a.moe) fail("routing.model", "\"measured\" routing needs an MoE architecture");
    std::vector<std::int64_t> moe_layers;
    for (std::int64_t l = 0; l < a.num_layers; ++l) {
      if (a.is_moe_layer(l)) moe_layers.push_back(l);
    }
    check_measured_loads(p.routing, a.moe->num_experts, moe_layers, fail);
  }
  const BatchShape shape = batch_shape(p, a);
  const std::int64_t step_tokens_per_mb = shape.microbatch_tokens * p.dp();
  if (p.global_batch_tokens < step_tokens_per_mb) {
    fail("batch.global_batch_tokens",
         "global batch " + s(p.global_batch_tokens) + " tokens is smaller than one microbatch on every DP rank (" +
             s(shape.microbatch_tokens) + " x DP " + s(p.dp()) + " = " + s(step_tokens_per_mb) + ")");
  }
  if (p.pp_schedule == PipelineSchedule::interleaved_1f1b && p.pp > 1 && shape.microbatches % p.pp != 0) {
    fail("batch.global_batch_tokens", "interleaved 1F1B needs the microbatch count (" + s(shape.microbatches) +
                                          ") to be a multiple of the PP degree " + s(p.pp));
  }
  if (p.global_batch_tokens % step_tokens_per_mb != 0) {
    fail("batch.global_batch_tokens", "global batch " + s(p.global_batch_tokens) +
                                          " is not a multiple of microbatch tokens x DP = " + s(step_tokens_per_mb));
  }
  // A step is replayed pass by pass: every microbatch's every block becomes tasks (about nine
  // per block pass, ~160 bytes each; tests/sim/test_extreme_plans.cpp), so the replay's size is
  // bounded here rather than by the machine running out of memory part way.
  const std::vector<std::int64_t> per_stage = stage_layer_counts(p, a);
  const std::int64_t stage_layers = std::max<std::int64_t>(1, *std::max_element(per_stage.begin(), per_stage.end()));
  if (shape.microbatches > kMaxBlockPassesPerStage / stage_layers) {
    fail("batch.global_batch_tokens",
         "global batch " + s(p.global_batch_tokens) + " tokens gives " + s(shape.microbatches) + " microbatches x " +
             s(stage_layers) + " layers per stage; allowed: at most " + s(kMaxBlockPassesPerStage) +
             " block passes per stage and step (a replay of about 1.2 million tasks): a larger microbatch, more DP "
             "ranks or a smaller global batch");
  }
  // The design's own rules last: they may read the routing and the batch the rules above checked.
  design_of(p).check(p, a, fail);
}

}  // namespace moesim
