// cuBLASLt BF16 GEMM, operand mapping, operands and reference (see gemm.hpp).
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "errors.hpp"
#include "gemm.hpp"

namespace moesim::cal {

// Row-major C[m,n] is column-major C^T (n x m, ld n). With A = W and B = X in cuBLAS terms:
//   fwd:   W[n,k] is col-major k x n -> op T;  X[m,k] is col-major k x m -> op N
//   dgrad: W[k,n] is col-major n x k -> op N;  X[m,k] -> op N
//   wgrad: W[k,n] -> op N;                     X[k,m] is col-major m x k -> op T
CublasArgs cublas_args(const GemmDims& d) {
    CublasArgs a;
    a.M = d.n;
    a.N = d.m;
    a.K = d.k;
    a.ldc = d.n;
    switch (d.layout) {
        case Layout::Fwd:
            a.ta = CUBLAS_OP_T;
            a.lda = d.k;
            a.tb = CUBLAS_OP_N;
            a.ldb = d.k;
            break;
        case Layout::Dgrad:
            a.ta = CUBLAS_OP_N;
            a.lda = d.n;
            a.tb = CUBLAS_OP_N;
            a.ldb = d.k;
            break;
        case Layout::Wgrad:
            a.ta = CUBLAS_OP_N;
            a.lda = d.n;
            a.tb = CUBLAS_OP_T;
            a.ldb = d.m;
            break;
    }
    return a;
}

struct LtGemm::Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::size_t workspace = 0;
    ~Plan() {
        if (std::uncaught_exceptions() > 0) return;
        if (c) cublasLtMatrixLayoutDestroy(c);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (op) cublasLtMatmulDescDestroy(op);
    }
};

LtGemm::LtGemm(int device) : device_(device), workspace_(device, kWorkspaceBytes) {
    CAL_CUDA(cudaSetDevice(device_));
    CAL_CUBLAS(cublasLtCreate(&handle_));
}

LtGemm::~LtGemm() {
    if (handle_ && std::uncaught_exceptions() == 0) cublasLtDestroy(handle_);
}

std::shared_ptr<LtGemm::Plan> LtGemm::plan(const GemmDims& d) {
    CAL_CUDA(cudaSetDevice(device_));
    const CublasArgs g = cublas_args(d);
    auto p = std::make_shared<Plan>();
    CAL_CUBLAS(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CAL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof g.ta));
    CAL_CUBLAS(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof g.tb));
    auto rows = [](cublasOperation_t t, std::int64_t r, std::int64_t c) {
        return static_cast<std::uint64_t>(t == CUBLAS_OP_N ? r : c);
    };
    auto cols = [](cublasOperation_t t, std::int64_t r, std::int64_t c) {
        return static_cast<std::uint64_t>(t == CUBLAS_OP_N ? c : r);
    };
    CAL_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, rows(g.ta, g.M, g.K), cols(g.ta, g.M, g.K), g.lda));
    CAL_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, rows(g.tb, g.K, g.N), cols(g.tb, g.K, g.N), g.ldb));
    CAL_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_16BF, static_cast<std::uint64_t>(g.M),
                                          static_cast<std::uint64_t>(g.N), g.ldc));
    cublasLtMatmulPreference_t pref = nullptr;
    CAL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws = kWorkspaceBytes;
    CAL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->c, p->c, pref, 1, &res, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return nullptr;
    CAL_CUBLAS(st);
    p->algo = res.algo;
    p->workspace = res.workspaceSize;
    return p;
}

void LtGemm::run(const Plan& p, const bf16_bits* x, const bf16_bits* w, bf16_bits* c, cudaStream_t s) {
    const float alpha = 1.0f, beta = 0.0f;
    CAL_CUDA(cudaSetDevice(device_));  // launches go to the current device
    CAL_CUBLAS(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, c, p.c, c, p.c, &p.algo, workspace_.get(),
                              kWorkspaceBytes, s));
}

GemmOperands make_operands(const Slot& slot, const GemmDims& d, std::uint64_t base_seed, std::int64_t max_bytes) {
    GemmOperands op;
    op.dims = d;
    int l2 = 0;
    CAL_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, slot.device));
    // Enough copies that one pass over them is at least 3x the L2 (at most 32 copies).
    const std::int64_t per = op.bytes_per_set();
    op.sets = static_cast<int>(std::min<std::int64_t>(32, std::max<std::int64_t>(1, (3LL * l2 + per - 1) / per)));
    while (op.sets > 1 && per * op.sets > max_bytes) --op.sets;
    op.seed_x = stream_seed(base_seed, kRoleGemmX, 0);
    op.seed_w = stream_seed(base_seed, kRoleGemmW, 0);
    const auto sets = static_cast<std::uint64_t>(op.sets);
    op.x = DeviceBuffer(slot.device, 2 * sets * static_cast<std::uint64_t>(op.x_elems()));
    op.w = DeviceBuffer(slot.device, 2 * sets * static_cast<std::uint64_t>(op.w_elems()));
    op.c = DeviceBuffer(slot.device, 2 * sets * static_cast<std::uint64_t>(op.c_elems()));
    fill_bf16(op.x.as<bf16_bits>(), sets * static_cast<std::uint64_t>(op.x_elems()), op.seed_x, 0, slot.stream);
    fill_bf16(op.w.as<bf16_bits>(), sets * static_cast<std::uint64_t>(op.w_elems()), op.seed_w, 0, slot.stream);
    return op;
}

double reference_element(const GemmDims& d, std::uint64_t seed_x, std::uint64_t first_x, std::uint64_t seed_w,
                         std::uint64_t first_w, std::int64_t i, std::int64_t j) {
    double acc = 0;
    for (std::int64_t kk = 0; kk < d.k; ++kk) {
        const std::int64_t xi = d.layout == Layout::Wgrad ? kk * d.m + i : i * d.k + kk;
        const std::int64_t wi = d.layout == Layout::Fwd ? j * d.k + kk : kk * d.n + j;
        acc += static_cast<double>(bf16_to_float(rand_bf16(seed_x, first_x + static_cast<std::uint64_t>(xi)))) *
               static_cast<double>(bf16_to_float(rand_bf16(seed_w, first_w + static_cast<std::uint64_t>(wi))));
    }
    return acc;
}

double sampled_gemm_error(const GemmOperands& op, cudaStream_t s, int samples) {
    CAL_CUDA(cudaStreamSynchronize(s));
    double num = 0, den = 0;
    for (int t = 0; t < samples; ++t) {
        const std::uint64_t h = mix64(0xC0FFEEull + static_cast<std::uint64_t>(t));
        const auto i = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(op.dims.m));
        const auto j = static_cast<std::int64_t>((h >> 32) % static_cast<std::uint64_t>(op.dims.n));
        bf16_bits got = 0;
        CAL_CUDA(cudaMemcpy(&got, op.c.as<bf16_bits>() + i * op.dims.n + j, sizeof got, cudaMemcpyDeviceToHost));
        const double out = bf16_to_float(got);
        if (!std::isfinite(out)) return std::numeric_limits<double>::infinity();
        const double ref = reference_element(op.dims, op.seed_x, 0, op.seed_w, 0, i, j);
        num += (out - ref) * (out - ref);
        den += ref * ref;
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace moesim::cal
