#include "models/input/plan_profile_checks.hpp"

#include <algorithm>

#include "models/common/errors.hpp"
#include "models/plan/rank_layout.hpp"

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

// HybridEP's SMs fit the GPU; across NVLink domains it needs the profile's RDMA rates.
void check_hybridep(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& file,
                    const std::string& prefix) {
  if (static_cast<double>(plan.ep_sms) > hw.gpu.sm_count.value) {
    throw InputError(file, plan_path(prefix, "expert_parallel.sms"),
                     std::to_string(plan.ep_sms) + " SMs exceeds the " + std::to_string(int(hw.gpu.sm_count.value)) +
                         " of hardware profile \"" + hw.name + "\"'s GPU",
                     /*infeasible=*/true);
  }
  // (plan.domain_hosts is the profile's by now: compose sets it before these checks)
  const CommunicatorShape shape = communicator_shape(plan, Communicator::ep_mp);
  if (shape.ranks > shape.ranks_per_node && !hw.interconnect.ep_transports.hybridep->rdma_dispatch_efficiency_by_sms) {
    throw InputError(file, plan_path(prefix, "expert_parallel.transport"),
                     "\"hybridep\" across NVLink domains needs interconnect.ep_transports.hybridep."
                     "rdma_dispatch_efficiency_by_sms, which hardware profile \"" +
                         hw.name + "\" does not have; allowed here: an EP group inside one NVLink domain",
                     /*infeasible=*/true);
  }
}

// The transports beyond NCCL's collectives need the profile's interconnect.ep_transports numbers.
void check_ep_transport(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& file,
                        const std::string& prefix) {
  if (plan.ep == 1) return;
  const EpTransportSpecs& specs = hw.interconnect.ep_transports;
  const bool measured = plan.ep_transport == EpTransport::nccl_all_to_all ||
                        plan.ep_transport == EpTransport::nccl_all_gather ||
                        (plan.ep_transport == EpTransport::symmetric_memory && specs.symmetric_memory) ||
                        (plan.ep_transport == EpTransport::deepep && specs.deepep) ||
                        (plan.ep_transport == EpTransport::hybridep && specs.hybridep);
  if (measured) {
    if (plan.ep_transport == EpTransport::hybridep) check_hybridep(plan, hw, file, prefix);
    return;
  }
  std::string allowed = "nccl_all_to_all, nccl_all_gather";
  if (specs.symmetric_memory) allowed += ", symmetric_memory";
  if (specs.deepep) allowed += ", deepep";
  if (specs.hybridep) allowed += ", hybridep";
  throw InputError(file, plan_path(prefix, "expert_parallel.transport"),
                   "\"" + std::string(name_of(plan.ep_transport)) + "\" needs interconnect.ep_transports." +
                       std::string(name_of(plan.ep_transport)) + " numbers, which hardware profile \"" + hw.name +
                       "\" does not have; allowed here: " + allowed,
                   /*infeasible=*/true);
}

// The value the plan's training stack gives `path`, or nullptr (no stack, or the stack sets none).
const StackValue* stack_value(const StackUse& stack, std::string_view path) {
  if (stack.name.empty()) return nullptr;
  for (const StackValue& v : stack_presets().get(stack.name).values()) {
    if (v.path == path) return &v;
  }
  return nullptr;
}

// The plan key of the attention kernel (plan.kernels.attention), as stacks and errors name it.
constexpr const char* kAttentionKernelKey = "kernels.attention";

// The attention kernel the plan's stack calls, at the profile's rates for it.
void price_attention_kernel(ParallelPlan& plan, HardwareProfile& hw, StackUse& stack, const std::string& plan_file,
                            const std::string& plan_prefix) {
  const AttentionKernel wanted = plan.attention_kernel;
  ComputeSpec& c = hw.compute;
  // The unfused core attention is priced from the GEMM table and HBM rates (layer_ops.cpp).
  if (wanted == AttentionKernel::profile || wanted == c.attention_kernel || wanted == AttentionKernel::unfused) return;
  for (const auto& k : c.attention_by_kernel) {
    if (k.kernel != wanted) continue;
    c.attention_fwd_TFLOPs = k.fwd_TFLOPs;
    c.attention_bwd_TFLOPs = k.bwd_TFLOPs;
    c.attention_fwd_TFLOPs_by_seq_len.reset();  // measured for the profile's own kernel
    c.attention_bwd_TFLOPs_by_seq_len.reset();
    c.attention_kernel = wanted;
    return;
  }
  // The plan's stack calls this kernel (the value came from the preset, or equals it: `compare
  // --stack` writes a stack's values into each point): priced at the profile's rates, and said.
  const StackValue* chosen = stack_value(stack, kAttentionKernelKey);
  if (chosen != nullptr && nlohmann::json::parse(chosen->value) == name_of(wanted)) {
    const std::string note = "no " + std::string(name_of(wanted)) + " rates in hardware profile \"" + hw.name +
                             "\" (compute.attention_by_kernel): priced at the profile's attention rates";
    auto taken = std::find_if(stack.taken.begin(), stack.taken.end(),
                              [](const StackSetting& t) { return t.path == kAttentionKernelKey; });
    if (taken == stack.taken.end()) {
      stack.taken.push_back({kAttentionKernelKey, std::string(name_of(wanted)), std::string(chosen->source)});
      taken = stack.taken.end() - 1;
    }
    taken->note = note;
    plan.attention_kernel = AttentionKernel::profile;
    return;
  }
  std::string allowed = "profile, unfused";
  if (c.attention_kernel != AttentionKernel::profile) allowed += ", " + std::string(name_of(c.attention_kernel));
  for (const auto& k : c.attention_by_kernel) allowed += ", " + std::string(name_of(k.kernel));
  throw InputError(plan_file, plan_path(plan_prefix, kAttentionKernelKey),
                   "\"" + std::string(name_of(wanted)) + "\" needs compute.attention_by_kernel." +
                       std::string(name_of(wanted)) + " rates, which hardware profile \"" + hw.name +
                       "\" does not have (nobody measured that kernel on its GPU); allowed here: " + allowed,
                   /*infeasible=*/true);
}

// FP8 or MXFP8 attention (plan.precision.attention): cuDNN's fused attention on quantized q, k
// and v, at the rates measured for it on this GPU; a profile without them, or a plan whose stack
// calls another kernel, is refused.
void price_attention_precision(const ParallelPlan& plan, HardwareProfile& hw, const std::string& plan_file,
                               const std::string& plan_prefix) {
  const GemmPrecision format = plan.precision.attention;
  if (format == GemmPrecision::bf16) return;
  ComputeSpec& c = hw.compute;
  const std::string path = plan_path(plan_prefix, "precision.attention");
  if (c.low_precision_attention(format) == nullptr) {
    std::string allowed = "bf16";
    if (c.fp8_attention) allowed += ", fp8";
    if (c.mxfp8_attention) allowed += ", mxfp8";
    throw InputError(
        plan_file, path,
        "\"" + std::string(name_of(format)) + "\" needs compute." + std::string(name_of(format)) +
            "_attention rates, which hardware profile \"" + hw.name +
            "\" does not have (no published measurement of that attention on its GPU); allowed here: " + allowed,
        /*infeasible=*/true);
  }
  if (plan.attention_kernel == AttentionKernel::unfused || c.attention_kernel != AttentionKernel::cudnn) {
    const AttentionKernel k =
        plan.attention_kernel == AttentionKernel::unfused ? AttentionKernel::unfused : c.attention_kernel;
    throw InputError(plan_file, path,
                     "\"" + std::string(name_of(format)) +
                         "\" attention is cuDNN's fused attention (Transformer Engine's FP8 DotProductAttention), "
                         "but the plan's attention kernel is " +
                         std::string(name_of(k)) + "; allowed with it: bf16",
                     /*infeasible=*/true);
  }
  take_attention_format(hw, format);
}

}  // namespace

bool take_attention_format(HardwareProfile& hw, GemmPrecision format) {
  if (format == GemmPrecision::bf16) return true;
  const LowPrecisionAttentionSpec* rates = hw.compute.low_precision_attention(format);
  if (rates == nullptr) return false;
  hw.compute.attention_fwd_TFLOPs_by_seq_len = rates->fwd_TFLOPs_by_seq_len;
  hw.compute.attention_bwd_TFLOPs_by_seq_len = rates->bwd_TFLOPs_by_seq_len;
  return true;
}

void price_plan_kernels(ParallelPlan& plan, HardwareProfile& hw, StackUse& stack, const std::string& plan_file,
                        const std::string& plan_prefix) {
  price_attention_kernel(plan, hw, stack, plan_file, plan_prefix);
  price_attention_precision(plan, hw, plan_file, plan_prefix);
}

void check_plan_against_profile(const ParallelPlan& plan, const HardwareProfile& hw, const std::string& plan_file,
                                const std::string& plan_prefix) {
  check_linear_formats(plan, hw, plan_file, plan_prefix);
  check_ep_transport(plan, hw, plan_file, plan_prefix);
  if (!plan.offload_modules.empty() && !hw.node.host_link_GBps_per_direction) {
    throw InputError(
        plan_file, plan_path(plan_prefix, "activations.offload_modules"),
        "offloading copies activations to host memory and back, which needs node.host_link_GBps_per_direction, "
        "which hardware profile \"" +
            hw.name + "\" does not have; allowed here: remove the list",
        /*infeasible=*/true);
  }
}

}  // namespace moesim
