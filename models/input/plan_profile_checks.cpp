#include "models/input/plan_profile_checks.hpp"

#include "models/common/errors.hpp"

namespace moesim {

namespace {

std::string plan_path(const std::string& prefix, const std::string& path) {
  return prefix.empty() ? path : prefix + "." + path;
}

void check_linear_formats(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& file,
                          const std::string& prefix) {
  for (std::size_t c = 0; c < kLinearClasses; ++c) {
    const GemmPrecision format = plan.precision.linears[c];
    if (format == GemmPrecision::bf16 || hw.compute.low_precision(format) != nullptr) continue;
    std::string msg = "\"";
    msg += name_of(format);
    msg += "\" needs compute.";
    msg += name_of(format);
    msg += "_gemm rates, which hardware profile \"";
    msg += hw.name;
    msg += "\" does not have (its GPU has no such tensor-core path, or nobody measured it); allowed here: bf16";
    if (hw.compute.fp8_gemm) msg += ", fp8";
    if (hw.compute.mxfp8_gemm) msg += ", mxfp8";
    throw InputError(file, plan_path(prefix, "precision.linears." + std::string(name_of(static_cast<LinearClass>(c)))),
                     msg, /*infeasible=*/true);
  }
}

// The transports beyond NCCL's all-to-all need the profile's interconnect.ep_transports numbers.
void check_ep_transport(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& file,
                        const std::string& prefix) {
  if (plan.ep == 1) return;
  const EpTransportSpecs& specs = hw.interconnect.ep_transports;
  const bool measured = plan.ep_transport == EpTransport::nccl_all_to_all ||
                        (plan.ep_transport == EpTransport::symmetric_memory && specs.symmetric_memory) ||
                        (plan.ep_transport == EpTransport::deepep && specs.deepep);
  if (measured) return;
  std::string allowed = "nccl_all_to_all";
  if (specs.symmetric_memory) allowed += ", symmetric_memory";
  if (specs.deepep) allowed += ", deepep";
  throw InputError(file, plan_path(prefix, "expert_parallel.transport"),
                   "\"" + std::string(name_of(plan.ep_transport)) + "\" needs interconnect.ep_transports." +
                       std::string(name_of(plan.ep_transport)) + " numbers, which hardware profile \"" + hw.name +
                       "\" does not have; allowed here: " + allowed,
                   /*infeasible=*/true);
}

}  // namespace

void check_plan_against_profile(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& plan_file,
                                const std::string& plan_prefix) {
  check_linear_formats(plan, hw, plan_file, plan_prefix);
  check_ep_transport(plan, hw, plan_file, plan_prefix);
}

}  // namespace moesim
