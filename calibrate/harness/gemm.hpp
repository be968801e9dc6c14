// BF16 GEMM through cuBLASLt (BF16 in and out, FP32 accumulate, workspace, the heuristic's first
// algorithm), the row-major-to-cuBLAS operand mapping of the three layouts, operand buffers
// that rotate between several copies when one copy would sit in L2, and a sampled
// double-precision host reference for the correctness check.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "context.hpp"
#include "data_init.hpp"
#include "shapes.hpp"

namespace moesim::cal {

struct GemmDims {
    std::int64_t m = 0, n = 0, k = 0;
    Layout layout = Layout::Fwd;
    double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
};

// Column-major cuBLAS arguments computing C^T = op(W) * op(X) for our row-major C = X (.) W.
struct CublasArgs {
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    std::int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
};
CublasArgs cublas_args(const GemmDims& d);

class LtGemm {
  public:
    static constexpr std::size_t kWorkspaceBytes = 64ull << 20;
    explicit LtGemm(int device);
    ~LtGemm();
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    struct Plan;
    // Null when the heuristic offers no algorithm for this shape.
    std::shared_ptr<Plan> plan(const GemmDims& d);
    void run(const Plan& p, const bf16_bits* x, const bf16_bits* w, bf16_bits* c, cudaStream_t s);
    void* workspace() const { return workspace_.get(); }

  private:
    int device_;
    cublasLtHandle_t handle_ = nullptr;
    DeviceBuffer workspace_;
};

// X, W and C of one GEMM, in `sets` copies so that consecutive iterations do not hit in L2.
// Copy j of X holds the stream kRoleGemmX from element j * x_elems (likewise W).
struct GemmOperands {
    GemmDims dims;
    int sets = 1;
    std::uint64_t seed_x = 0, seed_w = 0;
    DeviceBuffer x, w, c;
    std::int64_t x_elems() const { return dims.m * dims.k; }
    std::int64_t w_elems() const { return dims.n * dims.k; }
    std::int64_t c_elems() const { return dims.m * dims.n; }
    std::int64_t bytes_per_set() const { return bytes_for(dims); }
    static std::int64_t bytes_for(const GemmDims& d) { return 2 * (d.m * d.k + d.n * d.k + d.m * d.n); }
};

// Allocates and fills operands on `slot`'s device; sets chosen from the L2 size.
GemmOperands make_operands(const Slot& slot, const GemmDims& d, std::uint64_t base_seed, std::int64_t max_bytes);

// Relative error ||C - ref|| / ||ref|| over `samples` elements of copy 0 of C (host reference in
// double from the same BF16 inputs); NaN output gives infinity.
double sampled_gemm_error(const GemmOperands& op, cudaStream_t s, int samples);

// Reference value of C[i][j] for operands stored as in GemmOperands (first = stream offsets).
double reference_element(const GemmDims& d, std::uint64_t seed_x, std::uint64_t first_x, std::uint64_t seed_w,
                         std::uint64_t first_w, std::int64_t i, std::int64_t j);

// BF16 operands give errors between 1e-3 and 1e-2 (METHOD.md); allow 2e-2.
constexpr double kGemmTolerance = 2e-2;

}  // namespace moesim::cal
