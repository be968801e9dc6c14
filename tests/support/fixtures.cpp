#include "tests/support/fixtures.hpp"

#include "models/common/json_reader.hpp"
#include "models/plan/rank_layout.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/step_simulation.hpp"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <sys/wait.h>

#include <unistd.h>

namespace moesim::test {

namespace fs = std::filesystem;

InputError load_error(const std::string& file, const std::vector<std::string>& sets) {
  try {
    load_scenario(file, sets);
  } catch (const InputError& e) {
    return e;
  }
  throw std::logic_error(file + " loaded without an error");
}

Scenario gallery(const std::string& name, const std::vector<std::string>& sets) {
  return load_scenario(source_path("scenarios/gallery/" + name + ".json"), sets);
}

std::vector<LayerOpKind> kinds(const LayerOps& ops) {
  std::vector<LayerOpKind> out;
  for (const auto& op : ops.ops) out.push_back(op.kind);
  return out;
}

HardwareProfile bundled_profile(const std::string& file) {
  const std::string path = source_path("hardware_profiles/" + file);
  return parse_hardware_profile(JsonReader(read_json_file(path), path, ""));
}

const HardwareProfile& b300_profile() {
  static const HardwareProfile hw = bundled_profile("b300-hgx.json");
  return hw;
}

std::string source_path(const std::string& relative) { return std::string(MOESIM_SOURCE_DIR) + "/" + relative; }

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  root_ = (fs::temp_directory_path() / ("moesim-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++)))
              .string();
  fs::create_directories(root_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string TempDir::path(const std::string& name) const { return root_ + "/" + name; }

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const std::string p = path(name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

Scenario fig8(const std::string& plan, int experts) {
  return load_scenario(source_path("scenarios/fig8/moe-" + plan + ".json"),
                       {"architecture.moe.num_experts=" + std::to_string(experts)});
}

nlohmann::json tiny_dense_architecture(std::int64_t heads, std::int64_t kv_heads) {
  return {{"num_layers", 2},
          {"d_model", 64},
          {"vocab_size", 128},
          {"sequence_length", 16},
          {"attention", {{"num_heads", heads}, {"num_kv_heads", kv_heads}, {"head_dim", 64 / heads}}},
          {"dense_hidden", 128}};
}

nlohmann::json inline_fig8_document(const std::string& plan) {
  return {{"name", "inline-fig8"},
          {"architecture", read_json_file(source_path("scenarios/architectures/olmo-ddp-bench-moe.json"))},
          {"plan", read_json_file(source_path("scenarios/plans/" + plan + "-1node.json"))},
          {"hardware", read_json_file(source_path("hardware_profiles/b300-hgx.json"))}};
}

double persistent_bytes_per_param(const TensorInfo& tensor, double local_numel, std::int64_t group,
                                  const ParallelPlan& plan) {
  const LocalTensor lt{&tensor, local_numel, group};
  OptimizerShardReport report;
  double sum = 0;
  for (const auto& item : persistent_state({lt}, plan, report)) sum += item.bytes;
  return sum / static_cast<double>(tensor.numel);
}

int run_cli(const std::string& args) {
  const std::string cmd = std::string(MOESIM_CLI) + " " + args + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LedgerRun run_ledger(const Scenario& s) {
  LedgerRun r{s, build_inventory(s.arch), {}};
  r.ledger = scenario_ledger(r.scenario, r.inventory);
  return r;
}

PlanSearchResult plan_search(const std::string& file, const std::vector<std::string>& sets, std::int64_t gpus,
                             const std::vector<std::string>& search) {
  const ScenarioSource source = read_scenario(source_path(file), sets);
  PlanRequest q;
  q.gpus = gpus;
  q.search = search;
  return search_plans(source, plan_space(source, compose(source), q), PlanSearchOptions{});
}

StageReplay replay_stage0(const Scenario& s) {
  const Inventory inv = build_inventory(s.arch);
  const MemoryLedger ledger = scenario_ledger(s, inv);
  const InFlight in_flight = schedule_in_flight(s.plan, batch_shape(s.plan, s.arch).microbatches);
  OptimizerShardReport report;
  const auto tensors = stage_tensors(inv, s.arch, s.plan, 0);
  const auto persistent = persistent_state(tensors, s.plan, report);
  const std::vector<StagePass> order = stage_pass_orders(s.plan, batch_shape(s.plan, s.arch).microbatches)[0];
  return {replay_stage_allocations(s.arch, s.plan, tensors, persistent, 0, in_flight.chunks[0], order, 0),
          ledger.stages[0]};
}

}  // namespace moesim::test
