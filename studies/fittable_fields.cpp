#include "studies/fittable_fields.hpp"

#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"

namespace moesim {

namespace {

// Shared wording of the ranges that several fields take from one source.
constexpr const char* kEfficiencyWhy =
    "0.1-1: NCCL reaches 0.7-0.9 of NVLink at large sizes; under a tenth the data describe other hardware "
    "(calibrate/README.md, safety checks); above 1 beats the link";
constexpr const char* kMemoryKernelWhy =
    "0.1-1 of the copy rate: no memory kernel streams faster than a copy; under a tenth is another GPU "
    "(calibrate/fit/fitted_fields.hpp kMinPlausibleFraction)";
constexpr const char* kPassWhy =
    "0.5-1.2: a cuBLAS backward GEMM runs within about half to 1.2x of the forward rate of the same dense shape "
    "(the shipped profiles' 0.99; SimuMax's B200 dense table); the grouped tables are not scaled";

std::vector<FittableField> build_table() {
  std::vector<FittableField> t = {
      {"hardware.interference.compute_slowdown_with_comm", 0.0, 0.95, "fraction",
       "how much a GEMM slows while communication kernels run beside it",
       "0: no contention; 0.95: the profile parser's ceiling (B300 measures 0.23-0.27)"},
      {"hardware.interference.comm_slowdown_with_compute", 0.0, 1.0, "fraction",
       "how much a collective slows while a compute kernel runs beside it",
       "0-1: published slowdowns of collectives beside GEMMs reach 2x (models/hw/hardware_profile.cpp)"},
      {"hardware.host.step_overhead_us", 0.0, 100000.0, "us",
       "host work the GPU waits for once per step (optimizer launch, synchronisations, logging)",
       "0-100 ms: more than 100 ms per step is a data-loader or checkpoint stall, not a fixed cost (assumption)"},
      {"hardware.compute.kernel_launch_us", 0.0, 50.0, "us", "fixed cost added to every kernel",
       "0-50 us: CUDA launches take 2-10 us; 50 leaves room for Python dispatch between kernels (assumption)"},
      {"hardware.compute.gemm_dgrad_over_forward", 0.5, 1.2, "ratio",
       "dense input-gradient GEMM rate over the forward rate of the same shape", kPassWhy},
      {"hardware.compute.gemm_wgrad_over_forward", 0.5, 1.2, "ratio",
       "dense weight-gradient GEMM rate over the forward rate of the same shape", kPassWhy},
      {"hardware.memory.fragmentation_fraction", 0.0, 0.5, "fraction",
       "share of reserved memory lost to allocator fragmentation (peak reserved only, and only under "
       "plan.allocator.model=fixed_fraction: the default caching-allocator replay does not read it)",
       "0-0.5: GMLake (Guo et al., ASPLOS 2024) measured up to 33% on A100 LLM training, a 2025 study (arXiv "
       "2507.16274) up to 43%; 0.5 is generous"},
  };
  for (const char* kernel : {"elementwise", "permute", "cross_entropy", "optimizer"}) {
    t.push_back({std::string("hardware.compute.hbm_fraction_by_kernel.") + kernel, 0.1, 1.0, "fraction",
                 std::string("fraction of the sustained HBM rate the ") + kernel + " kernels reach", kMemoryKernelWhy});
  }
  const std::pair<const char*, const char*> collectives[] = {
      {"ring", "all_reduce"}, {"ring", "all_gather"}, {"ring", "reduce_scatter"}, {"p2p", "all_to_all"}};
  for (const auto& [algorithm, kind] : collectives) {
    t.push_back({std::string("hardware.interconnect.intra_node.") + algorithm + ".busbw_efficiency." + kind, 0.1, 1.0,
                 "fraction", std::string("NVLink bus-bandwidth efficiency of ") + algorithm + " " + kind,
                 kEfficiencyWhy});
  }
  t.push_back({"hardware.interconnect.ep_transports.symmetric_memory.time_over_nccl_all_to_all", 0.5, 3.0, "ratio",
               "row-wise symmetric-memory EP dispatch/combine time over NCCL's all-to-all of the same rows",
               "0.5-3: the report's Table 7 measures 1.17-1.23 on B300; a put path twice as fast as NCCL or three "
               "times slower would be another implementation (assumption)"});
  t.push_back({"hardware.interconnect.ep_transports.deepep.nvlink_efficiency", 0.1, 1.0, "fraction",
               "DeepEP's achieved fraction of the NVLink rate", kEfficiencyWhy});
  t.push_back({"hardware.interconnect.intra_node.nvls.busbw_efficiency.all_reduce", 0.1, 2.0, "fraction",
               "NVLink SHARP all_reduce bus-bandwidth efficiency",
               "0.1-2: the switch reduces in the fabric, so busbw may pass the link rate up to 2x "
               "(calibrate/README.md, safety checks)"});
  return t;
}

}  // namespace

const std::vector<FittableField>& fittable_fields() {
  static const std::vector<FittableField> table = build_table();
  return table;
}

const FittableField& fittable_field(const std::string& name, const std::string& origin) {
  std::vector<std::string> names;
  for (const auto& f : fittable_fields()) {
    if (f.name == name) return f;
    names.push_back(f.name);
  }
  throw InputError(origin, name,
                   "not a fittable profile field" + did_you_mean(name, names, "fittable: " + comma_joined(names)));
}

std::string value_path(const FittableField& field) { return field.name + ".value"; }

}  // namespace moesim
