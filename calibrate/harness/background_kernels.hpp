// The compute kernels the communication side of the interference group runs beside each
// collective, on every GPU's main stream: the shapes' interference GEMM (cuBLASLt) and the routed
// experts' first grouped GEMM over uniform seeded top-K routing (cublasGemmGroupedBatchedEx, else
// one cuBLASLt call per expert in order). What the record names them by, and a sampled check.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "context.hpp"
#include "gemm.hpp"
#include "grouped_ops.hpp"
#include "shapes.hpp"

namespace moesim::cal {

class BackgroundKernel {
  public:
    BackgroundKernel(Context& ctx, std::string kind, std::string shape_name, Layout layout)
        : ctx_(ctx), kind_(std::move(kind)), shape_name_(std::move(shape_name)), layout_(layout) {}
    virtual ~BackgroundKernel() = default;
    BackgroundKernel(const BackgroundKernel&) = delete;
    BackgroundKernel& operator=(const BackgroundKernel&) = delete;

    // One iteration on every local GPU's main stream.
    virtual void enqueue() = 0;
    // Sampled relative error of the first GPU's output (synchronises its main stream).
    virtual double check_error() = 0;
    virtual std::string method() const = 0;
    virtual double flops() const = 0;

    const std::string& kind() const { return kind_; }  // "gemm" or "grouped_gemm"
    const std::string& shape_name() const { return shape_name_; }
    Layout layout() const { return layout_; }

  protected:
    Context& ctx_;

  private:
    std::string kind_, shape_name_;
    Layout layout_;
};

// Device bytes per GPU each background needs.
std::int64_t dense_background_bytes(const GemmShape& s);
std::int64_t grouped_background_bytes(const GroupedGemmConfig& c);

// Null when cuBLASLt offers no algorithm (the dense one) or the config has no grouped shape.
std::unique_ptr<BackgroundKernel> make_dense_background(Context& ctx, const GemmShape& s, std::uint64_t seed);
std::unique_ptr<BackgroundKernel> make_grouped_background(Context& ctx, const GroupedGemmConfig& c);

}  // namespace moesim::cal
