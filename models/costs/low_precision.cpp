#include "models/costs/low_precision.hpp"

#include "models/common/units.hpp"

namespace moesim {

namespace {
constexpr double kMxBlock = 32;    // OCP MX v1.0: elements sharing one E8M0 scale in MXFP8
constexpr double kScaleBytes = 1;  // E8M0: an 8-bit exponent
}  // namespace

double quantized_bytes_per_element(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16: return bytes_of(DType::bf16);
    case GemmPrecision::fp8: return bytes_of(DType::fp8);
    case GemmPrecision::mxfp8: return bytes_of(DType::fp8) + kScaleBytes / kMxBlock;
  }
  return bytes_of(DType::bf16);
}

double quantize_traffic_per_element(GemmPrecision p) {
  const double read = bytes_of(DType::bf16);
  if (p == GemmPrecision::bf16) return 0;
  const double amax_pass = p == GemmPrecision::fp8 ? read : 0;
  return amax_pass + read + quantized_bytes_per_element(p);
}

QuantizeKernels linear_quantize_kernels(double rows, double in, double out, double weight_elements, bool weight_caches,
                                        bool input_quantized) {
  QuantizeKernels k;
  if (!input_quantized) k.fwd.push_back(rows * in);  // X along K for Y = X W
  if (!weight_caches) k.fwd.push_back(weight_elements);
  k.bwd.push_back(rows * out);  // dY along `out` for dX = dY W^T
  if (!weight_caches) k.bwd.push_back(weight_elements);
  k.bwd.push_back(rows * out);  // dY along the rows for dW = X^T dY
  k.bwd.push_back(rows * in);   // X along the rows
  return k;
}

double quantized_operand_bytes(GemmPrecision p, const QuantizeKernels& kernels, bool backward) {
  if (p == GemmPrecision::bf16) return 0;
  double elements = 0;
  for (double n : backward ? kernels.bwd : kernels.fwd) elements += n;
  return elements * quantized_bytes_per_element(p);
}

double weight_cache_bytes_per_param(GemmPrecision p) {
  return p == GemmPrecision::bf16 ? 0 : 2 * quantized_bytes_per_element(p);
}

double weight_cache_refresh_traffic_per_param(GemmPrecision p) {
  if (p == GemmPrecision::bf16) return 0;
  // Read the BF16 weight once per orientation's cast, write that orientation.
  return 2 * quantize_traffic_per_element(p);
}

std::optional<LinearClass> linear_class_of(TensorClass c) {
  switch (c) {
    case TensorClass::attention:
    case TensorClass::mamba: return LinearClass::attention;  // a token mixer's linears, like attention's
    case TensorClass::dense_mlp: return LinearClass::dense_mlp;
    case TensorClass::shared_expert: return LinearClass::shared_expert;
    case TensorClass::routed_expert: return LinearClass::routed_expert;
    case TensorClass::lm_head: return LinearClass::lm_head;
    case TensorClass::embedding:
    case TensorClass::norm:
    case TensorClass::router: return std::nullopt;
  }
  return std::nullopt;
}

CachedWeights cached_weights(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan) {
  CachedWeights out;
  if (!plan.precision.weight_caches) return out;
  for (const auto& lt : tensors) {
    const auto cls = linear_class_of(lt.tensor->cls);
    if (!cls) continue;
    const GemmPrecision p = plan.precision.linear(*cls);
    if (p == GemmPrecision::bf16) continue;
    out.elements += lt.local_numel;
    out.bytes += lt.local_numel * weight_cache_bytes_per_param(p);
    out.refresh_traffic += lt.local_numel * weight_cache_refresh_traffic_per_param(p);
  }
  return out;
}

}  // namespace moesim
