// The parallel design: how the world of GPUs is split (PP x DP, EP-MP inside DP), which data
// parallel design runs (FSDP2 full reshard or Olmo-core DDP), optimizer, precision and batch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/common/cost_types.hpp"
#include "models/common/enum_names.hpp"
#include "models/common/units.hpp"
#include "models/moe/expert_probs.hpp"
#include "models/moe/routing.hpp"
#include "models/plan/offload_modules.hpp"
#include "models/plan/pipeline_layout.hpp"
#include "models/plan/recompute_modules.hpp"

namespace moesim {

class JsonReader;
struct Architecture;

enum class OptimizerKind { adamw, muon, sgd };
enum class ShardLayout { per_tensor, concat_then_shard, same_param_count };
// Activation recomputation: none; full (each block keeps its input and runs its forward again
// before its backward); selective (Korthikanti et al. 2022's SwiGLU products, or Megatron-Core's
// recompute_modules.hpp); selective_op (torchtitan's op-level checkpointing, dense: activations.hpp).
enum class Recompute { none, full, selective, selective_op };
// The LM head's loss path (models/costs/loss_paths.hpp): eager PyTorch cross-entropy, the same
// under torch.compile, flash-attn's Triton cross-entropy, Liger's fused linear cross-entropy, Megatron-Core's
// vocab-parallel cross-entropy, Cut Cross-Entropy.
enum class LossImpl { standard, compiled, flash_attn, fused, vocab_parallel, vocab_parallel_fused, te, cut };
inline constexpr EnumNames<LossImpl, 8> kLossImplNames{"loss",
                                                       {{{LossImpl::standard, "standard"},
                                                         {LossImpl::compiled, "compiled"},
                                                         {LossImpl::flash_attn, "flash_attn"},
                                                         {LossImpl::fused, "fused"},
                                                         {LossImpl::vocab_parallel, "vocab_parallel"},
                                                         {LossImpl::vocab_parallel_fused, "vocab_parallel_fused"},
                                                         {LossImpl::te, "te"},
                                                         {LossImpl::cut, "cut"}}}};
// How each pipeline stage orders its passes (sim/pipeline_schedule.hpp): 1F1B, Megatron-LM's
// interleaved 1F1B, the V-shape 1F1B (two chunks per stage, the model going down the stages and
// back up), Zero Bubble H1 and ZB-V (the backward split into input- and weight-gradient passes).
enum class PipelineSchedule { one_f_one_b, interleaved_1f1b, one_f_one_b_v, zb_h1, zbv };
enum class GradSync { all_reduce, reduce_scatter };
// How context parallelism runs attention over a sequence split across CP ranks: a ring passing
// each rank's K and V chunks peer to peer, overlapped with the attention chunks (Megatron-Core /
// Transformer Engine's default "p2p" cp_comm_type, torchtitan's ring attention), or all-to-alls
// that trade the sequence split for a head split around the attention (DeepSpeed-Ulysses, TE's
// "a2a").
enum class CpVariant { ring, all_to_all };
inline constexpr EnumNames<CpVariant, 2> kCpVariantNames{
    "context-parallel variant", {{{CpVariant::ring, "ring"}, {CpVariant::all_to_all, "all_to_all"}}}};
// torchtitan's fsdp_reshard_after_forward policy (torchtitan/distributed/fsdp.py
// get_fsdp_reshard_after_forward_policy): "default" reshards after forward unless the plan has a
// pipeline, where regathering every microbatch would cost an all-gather per pass.
enum class ReshardPolicy { always, never, unless_pipelined };
inline constexpr EnumNames<ReshardPolicy, 3> kReshardPolicyNames{"reshard-after-forward policy",
                                                                 {{{ReshardPolicy::always, "always"},
                                                                   {ReshardPolicy::never, "never"},
                                                                   {ReshardPolicy::unless_pipelined, "default"}}}};
// Which FSDP runs the plan (plan.fsdp.implementation): PyTorch's fully_shard (FSDP2, one
// DTensor shard per parameter) or FullyShardedDataParallel (FSDP1, one flat parameter per unit).
enum class FsdpImplementation : std::uint8_t { fsdp2, fsdp1 };
inline constexpr EnumNames<FsdpImplementation, 2> kFsdpImplementationNames{
    "FSDP implementation", {{{FsdpImplementation::fsdp2, "fsdp2"}, {FsdpImplementation::fsdp1, "fsdp1"}}}};
// FSDP1's backward_prefetch (torch.distributed.fsdp.BackwardPrefetch): where the next unit's
// all-gather is issued in backward, before this unit's gradient computation (pre), after it
// (post), or only when the next unit's own backward starts (none).
enum class BackwardPrefetch : std::uint8_t { backward_pre, backward_post, none };
inline constexpr EnumNames<BackwardPrefetch, 3> kBackwardPrefetchNames{
    "FSDP1 backward prefetch",
    {{{BackwardPrefetch::backward_pre, "backward_pre"},
      {BackwardPrefetch::backward_post, "backward_post"},
      {BackwardPrefetch::none, "none"}}}};
inline constexpr EnumNames<GradSync, 2> kGradSyncNames{
    "gradient sync", {{{GradSync::all_reduce, "all_reduce"}, {GradSync::reduce_scatter, "reduce_scatter"}}}};
// How the optimizer update is written, which sets how many passes it makes over HBM:
// one fused kernel, PyTorch's foreach AdamW (torch.optim.adamw _multi_tensor_adamw), or Olmo-core's
// hand-written foreach AdamW (olmo_core/optim/adamw.py foreach_adamw_step).
enum class OptimizerKernels { fused, foreach, olmo_core_foreach };

// How the updated shards reach the BF16 compute weights: Olmo-core casts each shard into a pack
// buffer, all-gathers into a coalesced buffer and copies every tensor out
// (OLMoDDPOptimizer._copy_main_params_to_model_params); Megatron-LM casts into its slice of the
// contiguous parameter buffer and all-gathers that buffer in place (DistributedOptimizer with
// ParamAndGradBuffer), holding no extra memory.
enum class WeightRebuild { coalesced_copy, in_place };

// How allocated memory becomes reserved memory (models/memory/caching_allocator.hpp): a replay of
// PyTorch's caching allocator over the step's allocation order, or the older rule of one
// profile fraction lost on every byte (hardware memory.fragmentation_fraction).
enum class AllocatorModel { pytorch_caching, fixed_fraction };
struct AllocatorSpec {
  AllocatorModel model = AllocatorModel::pytorch_caching;
  bool expandable_segments = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (off by default)
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::adamw;
  DType main_weight_dtype = DType::fp32;
  DType state_dtype = DType::fp32;
  ShardLayout layout = ShardLayout::per_tensor;
  std::int64_t min_shard_numel = 4096;             // Olmo-core: smaller tensors stay replicated
  std::int64_t foreach_chunk_numel = 600'000'000;  // Olmo-core foreach AdamW chunk (elements)
  OptimizerKernels kernels = OptimizerKernels::foreach;
  WeightRebuild rebuild = WeightRebuild::coalesced_copy;
  int states() const;  // AdamW 2 moments, Muon 1 momentum, SGD 0 (Section 4.1)
};

// The classes of linear layer a low-precision recipe converts, each on its own (torchtitan's and
// Olmo-core's float8 converters take a per-module filter). The router GEMM stays BF16: both leave
// it out (torchtitan's MXFP8 MoE recipe excludes router.gate; too small to gain).
enum class LinearClass : std::uint8_t { attention, dense_mlp, shared_expert, routed_expert, lm_head };
inline constexpr std::size_t kLinearClasses = static_cast<std::size_t>(LinearClass::lm_head) + 1;  // the last one
inline constexpr EnumNames<LinearClass, 5> kLinearClassNames{"linear class",
                                                             {{{LinearClass::attention, "attention"},
                                                               {LinearClass::dense_mlp, "dense_mlp"},
                                                               {LinearClass::shared_expert, "shared_expert"},
                                                               {LinearClass::routed_expert, "routed_expert"},
                                                               {LinearClass::lm_head, "lm_head"}}}};
constexpr std::string_view name_of(LinearClass value) { return kLinearClassNames.name(value); }

// Whose FP8 / MXFP8 linear layers run the recipe; it sets what a converted linear keeps of its
// input for the weight gradient (models/memory/activations.cpp):
//   torchao             the BF16 input itself (torchao float8_linear.py matmul_with_hp_or_float8_args
//                       and MX mx_mm: ctx.save_for_backward(input_hp, ...)); Olmo-core and
//                       torchtitan convert their linears with torchao;
//   transformer_engine  a quantized column-wise copy, the BF16 input freed (Transformer Engine
//                       module/linear.py _linear_forward_impl: inputmat.update_usage(rowwise_usage=
//                       False); layernorm_linear.py keeps the norm output only quantized;
//                       grouped_linear.py likewise per expert); Megatron-Core's TE layers.
enum class LowPrecisionLibrary : std::uint8_t { torchao, transformer_engine };
inline constexpr EnumNames<LowPrecisionLibrary, 2> kLowPrecisionLibraryNames{
    "low-precision library",
    {{{LowPrecisionLibrary::torchao, "torchao"}, {LowPrecisionLibrary::transformer_engine, "transformer_engine"}}}};
constexpr std::string_view name_of(LowPrecisionLibrary value) { return kLowPrecisionLibraryNames.name(value); }

struct PrecisionSpec {
  DType compute = DType::bf16;                          // compute weights and activations
  DType grad_accum = DType::fp32;                       // DDP bucket storage / FSDP sharded grads
  DType reduce = DType::fp32;                           // communication dtype of gradient reductions
  std::array<GemmPrecision, kLinearClasses> linears{};  // GEMM format per class (all BF16 by default)
  // Persistent quantized weights in the two orientations the forward and dgrad GEMMs read,
  // refreshed from the main weights after each optimizer step (seed 4.4.3, Olmo-core's DDP path);
  // without them every GEMM quantizes its weight on use (torchao MXLinear / Float8Linear).
  bool weight_caches = false;
  // The format EP dispatch sends routed rows in, quantized per token before the all-to-all for the expert GEMM
  // (DeepSeek-V3 report 3.3: FP8 dispatch; combine and backward BF16); needs routed_expert in that format.
  GemmPrecision ep_dispatch = GemmPrecision::bf16;
  GemmPrecision attention = GemmPrecision::bf16;  // the core attention's q/k/v format (plan_profile_checks.hpp)
  LowPrecisionLibrary library = LowPrecisionLibrary::torchao;
  GemmPrecision linear(LinearClass c) const { return linears[static_cast<std::size_t>(c)]; }
  bool any_low_precision() const {
    for (GemmPrecision p : linears) {
      if (p != GemmPrecision::bf16) return true;
    }
    return false;
  }
};

struct ParallelPlan {
  // The data-parallel design's word ("ddp", "fsdp", "zero2"); with the design options below it
  // selects one registered design entry (models/plan/designs/design.hpp design_of).
  std::string design = "ddp";
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 8;  // GPUs of each host (node) the job uses
  // Hosts one NVLink domain joins: a hardware fact, copied from the profile when a scenario is
  // composed (interconnect.intra_node.domain_gpus / node.gpus_per_node): 1 on an HGX host, 18 in a
  // GB200/GB300 NVL72 rack (18 compute trays of 4 GPUs).
  std::int64_t domain_hosts = 1;
  std::int64_t pp = 1;  // pipeline stages
  // Tensor parallelism (Megatron-LM, Shoeybi et al. 2019): each block's linears split over `tp`
  // ranks (column-parallel QKV and MLP up/gate, row-parallel output projection and MLP down; the
  // embedding, LM head and cross-entropy vocab-parallel), TP innermost in the rank order.
  std::int64_t tp = 1;
  // Sequence parallelism (Korthikanti et al. 2022): the norms, residuals and dropout between the
  // TP regions run on 1/tp of the sequence; an all-gather opens and a reduce-scatter closes each
  // TP region instead of one all-reduce after it. Megatron-Core and torchtitan run TP this way
  // (torchtitan's parallelize_llama always applies SequenceParallel), so it is the default.
  bool sequence_parallel = true;
  // TP communication overlap (Megatron-Core's tp_comm_overlap with userbuffers, torchtitan's async
  // TP): each all-gather is split and pipelined with the GEMM that reads it, each reduce-scatter
  // with the GEMM that writes it; needs sequence parallelism.
  bool tp_comm_overlap = false;
  // Context parallelism: each sequence split over `cp` ranks (2 x cp chunks, each rank a chunk from
  // either end so the causal work balances: Megatron-Core's get_batch_on_this_cp_rank), which
  // hold the same weights: the gradient sync and the distributed optimizer span DP x CP
  // (Megatron's data-parallel group with CP; torchtitan's FSDP over dp_shard x cp). Rank order
  // TP, CP, DP, PP.
  std::int64_t cp = 1;
  CpVariant cp_variant = CpVariant::ring;
  std::int64_t ep = 1;  // EP-MP degree M_E
  // Expert tensor parallelism (Megatron-Core's expert_tensor_parallel_size): each expert's hidden
  // width split over `etp` ranks, innermost in the experts' rank order (ETP, EP, EP-DP); the rows
  // an expert group receives are all-gathered over its ETP ranks before the expert GEMMs and
  // reduce-scattered after them (the all-to-all token dispatcher's TP steps).
  std::int64_t etp = 1;
  // How routed rows travel (cost_types.hpp EpTransport) and so where they live: NCCL all-to-all
  // stages them in per-layer tensors from the caching allocator, alive while the layer runs
  // (Olmo-core's sync_1d path, olmo_core/nn/moe/parallel_mlp.py
  // ParallelDroplessMLP.permute_and_all_to_all); symmetric memory and DeepEP keep capacity-sized
  // buffers per MoE block for the whole run (Olmo-core's rowwise NVSHMEM path,
  // olmo_core/nn/moe/v2/ep_config.py, ep_no_sync_buffers.py; DeepEP's Buffer).
  EpTransport ep_transport = EpTransport::nccl_all_to_all;
  std::int64_t ep_sms = 0;  // expert_parallel.sms: SMs HybridEP's kernels get (moe_flex_dispatcher_num_sms; 0: default)
  // NCCL's PXN relay for the EP all-to-all's cross-rail rows (expert_parallel.pxn true/false;
  // absent: the hardware profile's interconnect.inter_node.pxn, NCCL's default).
  PxnChoice ep_pxn = PxnChoice::profile;
  // Symmetric buffers: rows each destination rank can receive = this x the rank's routed rows
  // (Olmo-core ExpertParallelConfig.capacity_factor, default 1.25; overflow routes are tail-dropped).
  double ep_buffer_capacity_factor = 1.25;
  // Symmetric buffers: one scratch slot shared by all MoE blocks of the stage instead of one per
  // block (Olmo-core's _NoSyncSymmSharedPool; off unless attached).
  bool ep_buffers_shared = false;
  // Megatron-Core's overlap_moe_expert_parallel_comm (combined 1F1B): each steady-state forward runs fused with a
  // backward of another microbatch, layer by layer, so that one's EP all-to-alls run beside the other's compute
  // (model_chunk_schedule_plan.py); one more forward in the warm-up keeps the two independent. No effect without EP.
  bool ep_a2a_overlap = false;
  bool ep_delay_wgrad = false;  // expert_parallel.delay_wgrad: Megatron-Core's delay_wgrad_compute (moe_block.hpp)
  std::int64_t fsdp_shard = 0;  // FSDP shard group F (0: the whole DP group; < DP: HSDP)
  std::int64_t fsdp_prefetch = 1;
  bool distributed_optimizer = true;
  // FSDP2's reshard_after_forward: true frees each gathered unit after its forward and gathers it
  // again for backward; false keeps it gathered from forward to backward (FSDP1 SHARD_GRAD_OP).
  bool fsdp_reshard_after_forward = true;
  FsdpImplementation fsdp_implementation = FsdpImplementation::fsdp2;
  BackwardPrefetch fsdp_backward_prefetch = BackwardPrefetch::backward_pre;  // FSDP1 only
  double bucket_cap_bytes = 250 * kMiB;  // DDP bucket cap in comm-dtype bytes (DESIGN.md)
  GradSync grad_sync = GradSync::all_reduce;
  // Megatron-Core's DistributedDataParallelConfig switches (distributed_data_parallel_config.py).
  // overlap_grad_reduce: each bucket's reduction starts as the bucket fills in the last
  // microbatch's backward (Olmo-core's DDP always does); off, every bucket is reduced once the
  // backward has finished (finish_grad_sync). overlap_param_gather: the distributed optimizer's
  // weight all-gather leaves the step's end and runs bucket by bucket beside the next forward.
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = false;
  // Megatron-LM's gradient_accumulation_fusion (TE's fuse_wgrad_accumulation): each wgrad GEMM adds into
  // the FP32 main-gradient buffer itself; no BF16 gradient, no accumulation kernel (as Olmo-core's hook).
  bool grad_accumulation_fusion = false;
  PipelineSchedule pp_schedule = PipelineSchedule::one_f_one_b;
  std::int64_t pp_virtual = 1;
  std::vector<std::int64_t> pp_layer_split;  // layers per virtual stage (empty: even, uneven last)
  MegatronSplit pp_megatron;                 // pipeline.layout and Megatron's uneven split (pipeline_layout.hpp)
  OptimizerSpec optimizer;
  PrecisionSpec precision;
  // kernels.attention: the attention kernel the stack calls, at the profile's rates for it.
  AttentionKernel attention_kernel = AttentionKernel::profile;
  // kernels.pointwise: RoPE and the gated activation as fused passes or PyTorch's eager ops
  // (models/costs/layer_ops.cpp); a compiled block fuses them whatever this says.
  PointwiseKernels pointwise_kernels = PointwiseKernels::fused;
  bool eager_pointwise() const { return pointwise_kernels == PointwiseKernels::eager && !compiled_blocks; }
  ExpertProbs expert_probs = ExpertProbs::combine;  // kernels.expert_probs (models/moe/expert_probs.hpp)
  std::int64_t microbatch_sequences = 1;            // per rank
  std::int64_t global_batch_tokens = 0;
  Recompute recompute = Recompute::none;
  RecomputeModules recompute_modules;     // activations.recompute_modules, with selective
  std::int64_t recompute_num_layers = 0;  // activations.recompute_num_layers, with full (0: every layer)
  OffloadModules offload_modules;         // activations.offload_modules (offload_modules.hpp)
  LossImpl loss = LossImpl::standard;
  // Each block under torch.compile (Olmo-core's Transformer.apply_compile, torchtitan's
  // compile.enable with the "model" component): AOTAutograd's min-cut partitioner saves a norm's
  // input and FP32 rstd instead of its output, and a SwiGLU's up/gate outputs instead of its
  // product, recomputing them inside the backward's fused kernels (models/memory/activations.cpp).
  bool compiled_blocks = false;
  RoutingSpec routing;  // capacity_factor also sizes the routed-row buffers in the ledger
  AllocatorSpec allocator;

  std::int64_t world() const { return nodes * gpus_per_node; }
  // Ranks of one pipeline stage: TP x DP (the routed experts' EP-MP x EP-DP split them too: the
  // experts are not tensor-parallel, Megatron-Core's expert_tensor_parallel_size 1, so the EP group
  // may span TP ranks).
  std::int64_t stage_ranks() const { return world() / pp; }
  // GPUs of this job in one NVLink domain: its hosts spread evenly over the fewest domains that
  // can hold them (a job of 18 hosts fills one NVL72 rack; 24 hosts take 12 in each of two).
  std::int64_t domain_gpus() const;
  // Ranks holding the same TP shard of a stage: the data-parallel replicas of a weight (DP x CP).
  std::int64_t dp() const { return world() / (pp * tp); }
  std::int64_t ep_dp() const { return stage_ranks() / (ep * etp); }
  // The sequence share of one rank outside the TP regions (and in the MoE layers): 1/tp under
  // sequence parallelism, else the whole microbatch.
  double sequence_share() const { return sequence_parallel ? 1.0 / static_cast<double>(tp) : 1.0; }
  std::int64_t shard_group() const { return fsdp_shard == 0 ? dp() : fsdp_shard; }
  // FSDP with EP: the ranks each routed expert shard is sharded over (torchtitan's "efsdp" mesh,
  // parallel_dims.py: dp_shard x cp x tp / ep): the shard group's ranks, its TP ranks included,
  // divided by EP x ETP. Without EP the experts share the shard group.
  std::int64_t expert_shard_group() const { return ep * etp > 1 ? shard_group() * tp / (ep * etp) : shard_group(); }
  // Model chunks each stage runs: v with the interleaved schedule, 2 with a V-shape one (1F1B-V,
  // ZB-V) under PP, else 1.
  std::int64_t model_chunks() const {
    if (pp_schedule == PipelineSchedule::interleaved_1f1b) return pp_virtual;
    return pp > 1 && v_shape() ? 2 : 1;
  }
  // Stage s holds layer blocks s and 2P-1-s: down the stages and back up, the loss on stage 0.
  bool v_shape() const {
    return pp_schedule == PipelineSchedule::one_f_one_b_v || pp_schedule == PipelineSchedule::zbv;
  }
  // The backward runs as two passes, input gradients (B) then weight gradients (W), W deferred.
  bool splits_backward() const {
    return pp > 1 && (pp_schedule == PipelineSchedule::zb_h1 || pp_schedule == PipelineSchedule::zbv);
  }
};

inline constexpr EnumNames<OptimizerKind, 3> kOptimizerKindNames{
    "optimizer", {{{OptimizerKind::adamw, "adamw"}, {OptimizerKind::muon, "muon"}, {OptimizerKind::sgd, "sgd"}}}};
constexpr std::string_view name_of(OptimizerKind value) { return kOptimizerKindNames.name(value); }
inline constexpr EnumNames<ShardLayout, 3> kShardLayoutNames{"optimizer layout",
                                                             {{{ShardLayout::per_tensor, "per_tensor"},
                                                               {ShardLayout::concat_then_shard, "concat_then_shard"},
                                                               {ShardLayout::same_param_count, "same_param_count"}}}};
constexpr std::string_view name_of(ShardLayout value) { return kShardLayoutNames.name(value); }
inline constexpr EnumNames<Recompute, 4> kRecomputeNames{"recompute mode",
                                                         {{{Recompute::none, "none"},
                                                           {Recompute::full, "full"},
                                                           {Recompute::selective, "selective"},
                                                           {Recompute::selective_op, "selective_op"}}}};
constexpr std::string_view name_of(Recompute value) { return kRecomputeNames.name(value); }
inline constexpr EnumNames<OptimizerKernels, 3> kOptimizerKernelsNames{
    "optimizer kernels",
    {{{OptimizerKernels::fused, "fused"},
      {OptimizerKernels::foreach, "foreach"},
      {OptimizerKernels::olmo_core_foreach, "olmo_core_foreach"}}}};
constexpr std::string_view name_of(OptimizerKernels value) { return kOptimizerKernelsNames.name(value); }
inline constexpr EnumNames<WeightRebuild, 2> kWeightRebuildNames{
    "weight rebuild", {{{WeightRebuild::coalesced_copy, "coalesced_copy"}, {WeightRebuild::in_place, "in_place"}}}};
constexpr std::string_view name_of(WeightRebuild value) { return kWeightRebuildNames.name(value); }
inline constexpr EnumNames<AllocatorModel, 2> kAllocatorModelNames{
    "allocator model",
    {{{AllocatorModel::pytorch_caching, "pytorch_caching"}, {AllocatorModel::fixed_fraction, "fixed_fraction"}}}};
constexpr std::string_view name_of(AllocatorModel value) { return kAllocatorModelNames.name(value); }
// The scenario key's value: "1f1b", "zb_h1", ...
inline constexpr EnumNames<PipelineSchedule, 5> kPipelineScheduleNames{
    "pipeline schedule",
    {{{PipelineSchedule::one_f_one_b, "1f1b"},
      {PipelineSchedule::interleaved_1f1b, "interleaved_1f1b"},
      {PipelineSchedule::one_f_one_b_v, "1f1b_v"},
      {PipelineSchedule::zb_h1, "zb_h1"},
      {PipelineSchedule::zbv, "zbv"}}}};
constexpr std::string_view name_of(PipelineSchedule value) { return kPipelineScheduleNames.name(value); }

ParallelPlan parse_plan(const JsonReader& in);

// Microbatches x layers of one pipeline stage that one step may replay (validate_plan).
inline constexpr std::int64_t kMaxBlockPassesPerStage = std::int64_t{1} << 17;

// Plan facts that depend on the model: divisibility, stage split, microbatch count. Throws
// InputError naming `file` and the plan path at fault (under `prefix` when the plan is inlined).
void validate_plan(const ParallelPlan& plan, const Architecture& arch, const std::string& file,
                   const std::string& prefix);

// The rules tensor parallelism of degree `tp` puts on the architecture (heads, KV groups and
// hidden widths divide, or KV groups replicate; an MoE model needs sequence parallelism): the
// plan path at fault (under plan) and why, or an empty path when the architecture allows it.
// validate_plan and the plan search's refusals both ask it.
struct PlanRule {
  std::string path;
  std::string message;
};
PlanRule tensor_parallel_rule(const Architecture& arch, std::int64_t tp, bool sequence_parallel);
// The architecture's rules for an EP-MP and expert-TP degree and a CP degree (validate_plan and
// the planner's refusals both ask them).
PlanRule expert_parallel_rule(const Architecture& arch, std::int64_t ep, std::int64_t etp = 1);
PlanRule context_parallel_rule(const Architecture& arch, std::int64_t cp);
// The rules for the EP all-to-all overlap (Megatron-Core transformer_config.py: a pipeline needs
// the interleaved schedule; no full recompute): validate_plan and the planner both ask it.
PlanRule ep_a2a_overlap_rule(std::int64_t pp, std::string_view schedule, std::string_view recompute);

struct BatchShape {
  std::int64_t microbatch_tokens = 0;  // per rank
  std::int64_t microbatches = 0;       // m, per optimizer step
};
BatchShape batch_shape(const ParallelPlan& plan, const Architecture& arch);

// Layers per virtual pipeline stage (P x model_chunks of them, in model order; where each runs:
// place_of_virtual_stage).
std::vector<std::int64_t> virtual_stage_layer_counts(const ParallelPlan& plan, const Architecture& arch);
// Layers held by each pipeline stage (the sum of its chunks).
std::vector<std::int64_t> stage_layer_counts(const ParallelPlan& plan, const Architecture& arch);

struct LayerPlace {
  std::int64_t stage = 0;
  std::int64_t chunk = 0;
};
// Where virtual stage j runs: on stage j % P as its model chunk j / P (Megatron-LM's interleaved
// placement, and plain 1F1B with one chunk), or in a V: stage j, chunk 0 for j < P, then stage
// 2P-1-j, chunk 1 (torch/distributed/pipelining/_utils.py generate_stage_to_rank_mapping, style "v").
LayerPlace place_of_virtual_stage(const ParallelPlan& plan, std::int64_t j);
// The virtual stage of a stage's chunk (the inverse of place_of_virtual_stage).
std::int64_t virtual_stage_of(const ParallelPlan& plan, std::int64_t stage, std::int64_t chunk);

// Where a layer runs; layer -1 (embedding) is on the first virtual stage, layer num_layers
// (final norm and LM head) on the last.
LayerPlace place_of_layer(const ParallelPlan& plan, const Architecture& arch, std::int64_t layer);
// Every layer's place at once, indexed by layer + 1 (embedding first, LM head last): one pass
// instead of one per layer.
std::vector<LayerPlace> layer_places(const ParallelPlan& plan, const Architecture& arch);

}  // namespace moesim
