// What a low-precision GEMM recipe adds around its GEMMs: the quantization kernels of each pass
// and the persistent quantized weight caches. The recipes are torchao's, which Olmo-core's
// float8 module applies (olmo_core/float8/__init__.py Float8Config: ao = Float8Linear, ao_mx =
// MXLinear), with Olmo-core's own weight caches on its DDP path (seed Section 4.4.3).
#pragma once

#include <optional>

#include "models/arch/inventory.hpp"
#include "models/common/cost_types.hpp"
#include "models/plan/parallel_plan.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

// Bytes of one quantized element: FP8 E4M3 is one byte; MXFP8 adds one 8-bit E8M0 scale per
// block of 32 elements (OCP Microscaling Formats (MX) v1.0: MXFP8 block size k = 32). BF16: 2.
double quantized_bytes_per_element(GemmPrecision p);

// HBM traffic of quantizing one BF16 element: read it (2 B), write the quantized element. The
// tensorwise FP8 recipe reads the tensor once more for its amax before scaling (torchao float8
// dynamic scaling: amax, then scale and cast); MXFP8 takes each 32-element block's amax on the way.
double quantize_traffic_per_element(GemmPrecision p);

// Elements one linear layer [rows, in] x [in, out] quantizes per microbatch, in its forward and
// backward, kernel by kernel, as torchao's autograd functions do (mx_formats mx_linear.py mx_mm;
// float8 float8_linear.py matmul_with_hp_or_float8_args): the forward casts X along K (and W); the
// backward casts dY along `out` for dgrad, dY along the rows and X along the rows for wgrad (and
// W transposed for dgrad). Weight caches leave the weight casts out.
struct QuantizeKernels {
  std::vector<double> fwd;  // elements per kernel
  std::vector<double> bwd;
};
// `input_quantized`: X arrives already cast along K (FP8 EP dispatch), so the forward skips it.
QuantizeKernels linear_quantize_kernels(double rows, double in, double out, double weight_elements, bool weight_caches,
                                        bool input_quantized = false);

// Bytes of the quantized copies alive while one linear's GEMMs run, from the same kernels: the
// forward's (X, and W unless cached) or the backward's (dY twice, X, and W unless cached).
double quantized_operand_bytes(GemmPrecision p, const QuantizeKernels& kernels, bool backward);

// Persistent bytes per cached parameter: the forward and the dgrad orientation (seed 4.4.3).
double weight_cache_bytes_per_param(GemmPrecision p);
// HBM traffic per cached parameter of refreshing both orientations from the BF16 compute weight
// after an optimizer step (the seed: the caches are rebuilt through the BF16 representation).
double weight_cache_refresh_traffic_per_param(GemmPrecision p);

// The linear class whose GEMM a tensor is the weight of; nullopt for tensors no recipe converts
// (norms, the router, the embedding). A tied LM head multiplies by the embedding, which no cache
// holds: its GEMM quantizes the weight on use.
std::optional<LinearClass> linear_class_of(TensorClass c);

// Rank-local parameters per GEMM format that keep weight caches (empty unless the plan has them).
struct CachedWeights {
  double elements = 0;         // parameters cached
  double bytes = 0;            // both orientations
  double refresh_traffic = 0;  // HBM bytes of one refresh after the optimizer step
};
CachedWeights cached_weights(const std::vector<LocalTensor>& tensors, const ParallelPlan& plan);

}  // namespace moesim
