// A data-parallel design: how the ranks of a DP group hold and synchronise parameters, gradients
// and optimizer state (FSDP2 full reshard, Olmo-core DDP with the distributed optimizer, naive
// DDP, ZeRO-2, FSDP2 without resharding after forward). One registered entry per design, one file
// each in this folder, holds everything that is particular to it: its name and grammar parts,
// the plan defaults it implies, its feasibility rules, its persistent state and what it holds
// around each unit's compute, its update buffers, the planner's families for it, and the name of
// the parameter-sync strategy (sim/schedules/) that places its tasks. The plan parser, the
// design grammar, the memory ledger, the allocation replay, the step builder and the planner all
// ask the entry; none of them tests for a design by name.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/registry.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/plan_keys.hpp"

namespace moesim {

struct Architecture;
struct LocalTensor;
struct LedgerItem;
struct OptimizerShardReport;
struct StageView;
struct UpdateBuffers;

// A part of the design grammar that a design takes after its word: "ep8" sets
// plan.expert_parallel.degree = 8; "nodistopt" sets plan.ddp.distributed_optimizer = false.
struct GrammarPart {
  std::string_view word;   // "ep", "hsdp", "nodistopt"
  std::string_view path;   // the plan field it sets
  bool numbered = false;   // takes a degree after the word ("ep8")
  std::string_view value;  // the JSON value it sets when not numbered ("false")
};

// A plan's own grammar parts in its short name: right after the word ("+hsdp8") and after the
// pipeline parts ("+nodistopt"), so that "ddp+ep8+pp4+v2+nodistopt" reads in one order.
struct NameParts {
  std::string after_word;
  std::string after_pipeline;
};

// The plan fields a design decides when the plan does not (plan.expert_parallel.transport,
// plan.optimizer.implementation, plan.precision.weight_caches), read from each stack's code.
struct DesignDefaults {
  EpTransport ep_transport = EpTransport::nccl_all_to_all;
  OptimizerKernels optimizer_kernels = OptimizerKernels::foreach;
  bool weight_caches = false;
  ShardLayout optimizer_layout = ShardLayout::per_tensor;
};

class DesignEntry;

// One value of the plan search's design axis and what it searches.
struct PlannerFamily {
  std::string_view name;  // "fsdp", "hsdp", "ddp", "ddp-nodistopt", "zero2"
  bool searched_by_default = true;
  bool hsdp_axis = false;              // searches the HSDP shard degree (whole hosts, below DP)
  bool layout_axis = false;            // searches the distributed optimizer's shard layout
  bool ep_axis = false;                // searches EP degrees (else EP 1)
  std::vector<PlanSet> sets;           // what it writes into a candidate's plan
  const DesignEntry* entry = nullptr;  // the design it searches (set by planner_families)
};

// A plan-search candidate's degrees before it is composed, which a design's planner_refusal reads.
struct PlannerDegrees {
  std::int64_t tp = 1, ep = 1, etp = 1, dp = 1;
  std::int64_t shard_degree = 0;  // HSDP's shard group (0: the whole DP group)
  bool ep_a2a_overlap = false;    // the base plan's
};

// What a design holds around the compute of one unit (the embedding -1, a block, the LM head L)
// for one microbatch, in bytes on this rank: the ledger's working memory and the allocation
// replay read the same numbers.
struct UnitHold {
  double gathered = 0;      // parameters materialised while the unit runs (FSDP: its gathered weights)
  double weight_grad = 0;   // the gradient backward makes before the design takes it
  double reduce_input = 0;  // a reduction's input, alive until its collective completes
  // A gradient accumulated across the step's microbatches unsharded, from the unit's first
  // backward to its reduction once per step (FSDP2 under a pipeline schedule).
  double accumulated_grad = 0;
};

// Fails a plan: the plan path at fault and what is allowed (validate_plan's `fail`).
using PlanFail = std::function<void(const std::string& path, const std::string& message)>;

class DesignEntry : public Registered {
 public:
  constexpr DesignEntry(std::string_view name, std::string_view description, std::string_view word)
      : Registered(name, description), word_(word) {}

  // The plan.design value and the grammar's first word it answers to; entries sharing a word
  // are told apart by the plan's options (selected_by).
  std::string_view word() const { return word_; }
  virtual bool selected_by(const ParallelPlan& plan) const = 0;
  // The grammar: the plan fields its word resets, the parts it takes after it, and the parts
  // that name a plan of it (design_name) beside the common ones (ppN, vN, schedules, precision).
  virtual std::vector<std::pair<std::string, std::string>> word_fields() const = 0;
  virtual std::span<const GrammarPart> parts() const = 0;
  virtual NameParts name_parts(const ParallelPlan& plan) const = 0;
  virtual DesignDefaults defaults() const = 0;
  // Rules beyond the common ones (divisibility, stages, batch), each failing with its path.
  virtual void check(const ParallelPlan& plan, const Architecture& arch, const PlanFail& fail) const = 0;
  virtual std::vector<PlannerFamily> families() const = 0;
  // Which of check()'s rules a plan-search candidate's degrees alone break, worded as the search
  // counts its refusals ("" when none): the candidate is refused before it is composed.
  virtual std::string planner_refusal(const PlannerDegrees&) const { return ""; }

  // Memory: the persistent state, what the design holds around each unit, the ledger's items for
  // those holds in the forward and in one layer's backward, and the update's working buffers.
  virtual std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                                   OptimizerShardReport& report) const = 0;
  virtual UnitHold unit_hold(const ParallelPlan& plan, const StageView& view, std::int64_t unit) const = 0;
  virtual std::vector<LedgerItem> forward_items(const ParallelPlan& plan, const StageView& view) const = 0;
  virtual std::vector<LedgerItem> backward_items(const ParallelPlan& plan, const StageView& view,
                                                 std::int64_t layer) const = 0;
  virtual UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) const = 0;
  // Whether the step ends by rebuilding the compute weights from updated shards (a weight_rebuild
  // phase with the update buffers' pack and gather buffers).
  virtual bool rebuilds_weights(const ParallelPlan& plan) const = 0;
  // Whether its persistent gradients are flat buckets of at most the bucket cap (allocator
  // rounding), and whether they are new tensors every step (FSDP2's sharded gradients, released
  // by zero_grad(set_to_none=True)) rather than kept from the start.
  virtual bool bucketed_gradients() const = 0;
  virtual bool gradients_made_each_step() const = 0;
  // Whether a unit gathered for its forward stays gathered until its backward has run (FSDP2
  // without reshard_after_forward) instead of being freed and gathered again.
  virtual bool keeps_gathered_units() const { return false; }
  // Whether, under the plan's pipeline, its units stay gathered across the step's microbatches
  // and their gradients accumulate unsharded until a model chunk's last backward, then are
  // reduced once (FSDP2 under torch.distributed.pipelining): a unit is freed only by
  // reshard_after_forward or by that reduction.
  virtual bool accumulates_unsharded(const ParallelPlan&) const { return false; }
  // Whether, under `plan`, it moves parameters or gradients every microbatch (FSDP2, ZeRO-2), so
  // its communication does not shrink per token as the batch grows, unlike a design that reduces
  // once per step (DDP; FSDP2 without reshard_after_forward under a pipeline, which gathers and
  // reduces once): `moesim compare` looks for the batch where the second overtakes the first.
  virtual bool syncs_every_microbatch(const ParallelPlan& plan) const = 0;

  // The parameter-sync strategy (sim/schedules/param_sync.hpp) that places its tasks.
  virtual std::string_view param_sync() const = 0;

 private:
  std::string_view word_;
};

const Registry<DesignEntry>& design_entries();
// The entry a plan's design word and options select. Throws std::logic_error for a plan the
// parser could not have produced (an unknown word).
const DesignEntry& design_of(const ParallelPlan& plan);
// The design words in registry order, without repeats ("ddp", "fsdp", "zero2").
std::vector<std::string> design_words();
// The first registered entry of a design word: the one its plan selects without options. Throws
// std::logic_error for an unknown word.
const DesignEntry& first_design_of(std::string_view word);
// The defaults of a design word (its entries agree on them).
DesignDefaults design_defaults(std::string_view word);
// Every design's planner families, in the order the designs are registered; and one by name
// (throws UnknownNameError listing them).
std::vector<PlannerFamily> planner_families();
PlannerFamily planner_family(std::string_view name);

// Registration hooks, one per design file.
std::unique_ptr<DesignEntry> make_fsdp2_full_reshard_design();
std::unique_ptr<DesignEntry> make_olmo_ddp_design();
std::unique_ptr<DesignEntry> make_ddp_design();
std::unique_ptr<DesignEntry> make_fsdp2_shard_grad_op_design();
std::unique_ptr<DesignEntry> make_zero2_design();
std::unique_ptr<DesignEntry> make_fsdp1_full_shard_design();

}  // namespace moesim
