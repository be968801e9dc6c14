// Operands of a routed-expert grouped GEMM (one GEMM per expert with at least one routed row,
// concatenated in three buffers), its sampled correctness check, and one
// cublasGemmGroupedBatchedEx call over them. Shared by the grouped_gemm and sequence groups.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <vector>

#include "context.hpp"
#include "gemm.hpp"
#include "shapes.hpp"

#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120500
#define MOESIM_HAVE_GROUPED_BATCHED 1
#else
#define MOESIM_HAVE_GROUPED_BATCHED 0
#endif

namespace moesim::cal {

struct ExpertProblem {
    GemmDims dims;
    std::int64_t off_x = 0, off_w = 0, off_c = 0;  // element offsets in the concatenated buffers
};

struct GroupedOperands {
    std::vector<ExpertProblem> experts;  // experts with at least one row
    std::uint64_t seed_x = 0, seed_w = 0;
    DeviceBuffer x, w, c;
    double flops = 0;
};

// Allocates and fills the experts' operands; rows[e] is expert e's routed rows (the shape's
// rows_dim), experts with none are left out.
GroupedOperands make_grouped(const Slot& slot, const GroupedGemmShape& s, const std::vector<std::int64_t>& rows,
                             std::uint64_t seed);

// Device bytes make_grouped would allocate.
std::int64_t grouped_bytes(const GroupedGemmShape& s, const std::vector<std::int64_t>& rows);

// Sampled relative error over the first, middle and last expert (synchronises s).
double grouped_error(const GroupedOperands& g, cudaStream_t s);

// The argument arrays of one cublasGemmGroupedBatchedEx call (one group per expert) over `op`,
// with the pointer arrays in device memory. call() returns CUBLAS_STATUS_NOT_SUPPORTED when the
// harness was built against a cuBLAS older than 12.5.
class GroupedBatched {
  public:
    GroupedBatched(const Slot& slot, cublasHandle_t handle, const GroupedOperands& op);
    cublasStatus_t call() const;

  private:
    cublasHandle_t handle_;
    int count_ = 0;
    std::vector<cublasOperation_t> ta_, tb_;
    std::vector<int> m_, n_, k_, lda_, ldb_, ldc_, group_size_;
    std::vector<float> alpha_, beta_;
    DeviceBuffer pointers_;  // A pointers, then B, then C
};

}  // namespace moesim::cal
