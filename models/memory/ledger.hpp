// Per-rank memory ledger: persistent training state by class, execution working memory by
// phase, and the OOM verdict against the profile's usable capacity (seed Table 5).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/arch/inventory.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/memory/allocator_replay.hpp"
#include "models/plan/parallel_plan.hpp"

namespace moesim {

enum class MemClass {
  compute_weights,
  grad_buffers,
  main_weights,
  optimizer_states,  // persistent
  activations,
  activation_grads,
  logits_loss,
  weight_grad_transient,  // working
  fsdp_materialized,
  fsdp_grad_unsharded,
  ep_comm_buffers,
  cp_comm_buffers,       // context parallelism's K/V, output and gradient buffers (working)
  quantized_operands,    // FP8 / MXFP8 copies of a running GEMM's inputs (working)
  optimizer_transients,  // the update's temporaries (optimizer_step phase)
  weight_rebuild,        // the distributed optimizer's pack and gather buffers (weight_rebuild phase)
};
enum class Phase { forward, backward, grad_sync, optimizer_step, weight_rebuild };

std::string_view name_of(MemClass c);
std::string_view name_of(Phase p);

struct LedgerItem {
  std::string name;
  MemClass cls = MemClass::activations;
  double bytes = 0;
  std::string basis;  // the formula or rule that gave the number
  // The same bytes by the format they are kept in (saved activations: bf16, fp32, int64, fp8,
  // mxfp8), where an item holds several; empty otherwise.
  std::vector<std::pair<std::string, double>> by_format{};
};

struct PhaseSet {
  Phase phase = Phase::forward;
  std::vector<LedgerItem> items;
  double bytes() const;
};

struct OptimizerShardReport {
  std::string layout;
  double largest_bytes = 0;     // main weights + states on the largest rank
  double even_share_bytes = 0;  // the same, evenly divided
  std::int64_t replicated_tensors = 0;
  std::int64_t sharded_tensors = 0;
};

struct StageLedger {
  std::int64_t stage = 0;
  std::int64_t layers = 0;
  double local_params = 0;
  std::vector<std::int64_t> in_flight_chunks;  // passes held per model chunk at the peak
  double in_flight_microbatches = 0;           // the same in whole-stage equivalents (sum / chunks)
  double activation_bytes = 0;                 // saved activations at the peak moment
  std::vector<LedgerItem> persistent;
  std::vector<PhaseSet> phases;
  OptimizerShardReport optimizer;
  double persistent_bytes = 0;
  Phase peak_phase = Phase::forward;
  double peak_allocated = 0;  // persistent + largest phase working set
  // The allocator's view (plan.allocator): its reserved high-water mark on this device (a caching
  // allocator fills a tight device and releases its cache when a reservation fails), and what it
  // must hold at its worst moment once it has released what it can (headroom counts from it).
  double peak_reserved = 0;
  double reserved_required = 0;
  std::string allocator_basis;  // how the two were found
  bool allocator_oom = false;   // the replay under the device's limit failed a reservation
  double runtime_reserves = 0;  // CUDA context, NCCL, library workspaces (outside the allocator)
  double device_total = 0;      // reserved + runtime reserves
  double capacity = 0;
  double headroom = 0;  // capacity - (required + runtime reserves) (negative: OOM)
  bool oom = false;
  std::vector<LedgerItem> top_contributors;
  // A rerun step's (MemoryLedger::rerun): whether the synced dropless try, not the first, needs the most.
  bool rerun_try = false;
};

// Forward passes whose activations each pipeline stage holds at once, per model chunk (one
// chunk without interleaving), at the moment the most are held, and where the counts came from.
// The ledger does not derive them: the pipeline schedule (sim/pipeline_schedule) and the replay do.
struct InFlight {
  std::vector<std::vector<std::int64_t>> chunks;  // per stage, per chunk
  std::string source;
  // Replays a stage's allocations and frees in the order its passes run (sim/allocation_order.hpp);
  // the caching-allocator model (plan.allocator) needs it, the fixed-fraction rule does not.
  StageAllocationReplay replay;
};

struct MemoryLedger {
  std::vector<StageLedger> stages;
  std::size_t worst_stage = 0;  // the stage with the least headroom
  bool oom = false;
  std::string in_flight_source;
  // Why the sync-free MoE path reruns the step (models/plan/sync_free.hpp; "" when it does not):
  // each stage's ledger is then the try that needs more memory.
  std::string rerun;
};

MemoryLedger build_ledger(const Architecture& arch, const Inventory& inv, const ParallelPlan& plan,
                          const HardwareProfile& hw, const InFlight& in_flight);

// Pieces, exposed for tests and for the simulator.
struct LocalTensor;
std::vector<LedgerItem> persistent_state(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan,
                                         OptimizerShardReport& report);
std::vector<PhaseSet> working_memory(const Architecture& arch, const ParallelPlan& plan,
                                     const std::vector<LocalTensor>& tensors, std::int64_t stage,
                                     const std::vector<std::int64_t>& held_chunks);

}  // namespace moesim
