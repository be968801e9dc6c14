// Shared test helpers: paths to bundled inputs, temporary folders, scenario loading.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/arch/inventory.hpp"
#include "models/common/errors.hpp"
#include "models/costs/layer_ops.hpp"
#include "models/input/scenario.hpp"
#include "models/memory/allocator_replay.hpp"
#include "models/memory/ledger.hpp"
#include "studies/plan_search.hpp"

namespace moesim::test {

std::string source_path(const std::string& relative);

// A fresh folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const;
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string root_;
};

// The bundled B300 profile (hardware_profiles/b300-hgx.json), parsed once.
const HardwareProfile& b300_profile();
// A bundled profile by file name ("h100-hgx.json"), parsed.
HardwareProfile bundled_profile(const std::string& file);

// The InputError that loading the scenario `file` with `sets` throws; std::logic_error (failing
// the test) when it loads.
InputError load_error(const std::string& file, const std::vector<std::string>& sets);

// A gallery scenario (scenarios/gallery/NAME.json) with `sets` applied.
Scenario gallery(const std::string& name, const std::vector<std::string>& sets = {});

// The kinds of a block's ops, in list order.
std::vector<LayerOpKind> kinds(const LayerOps& ops);

// The bundled Figure 8 MoE scenario for `plan` (ddp, ddp-ep8, fsdp) with N routed experts.
Scenario fig8(const std::string& plan, int experts);

// A scenario document with every section inlined (architecture, plan, hardware), for mutation.
nlohmann::json inline_fig8_document(const std::string& plan);
// The 2-layer dense architecture of the golden step tests: d = 64, 16-token sequences, MLP 128,
// vocabulary 128, `heads` query and `kv_heads` KV heads sharing d.
nlohmann::json tiny_dense_architecture(std::int64_t heads = 4, std::int64_t kv_heads = 4);

// Runs the built `moesim` with `args` (output discarded) and returns its exit code.
int run_cli(const std::string& args);
std::string slurp(const std::string& path);

// Persistent bytes per parameter of one tensor held whole by a rank under `plan` (its replica
// group: `group` ranks).
double persistent_bytes_per_param(const TensorInfo& tensor, double local_numel, std::int64_t group,
                                  const ParallelPlan& plan);

// `moesim plan FILE --gpus N --search ...` on the scenario with `sets` applied (one thread).
PlanSearchResult plan_search(const std::string& file, const std::vector<std::string>& sets, std::int64_t gpus,
                             const std::vector<std::string>& search);

// Stage 0's allocator replay beside its ledger (sim/allocation_order.hpp).
struct StageReplay {
  AllocatorReplay replay;
  StageLedger ledger;
};
StageReplay replay_stage0(const Scenario& s);

struct LedgerRun {
  Scenario scenario;
  Inventory inventory;
  MemoryLedger ledger;
};
LedgerRun run_ledger(const Scenario& s);

}  // namespace moesim::test
