// Grouped-GEMM operands, check and grouped-batched call (see grouped_ops.hpp).
#include "grouped_ops.hpp"

#include <cmath>

#include "errors.hpp"

namespace moesim::cal {
namespace {

GemmDims expert_dims(const GroupedGemmShape& s, std::int64_t r) {
    return {s.rows_dim == 'm' ? r : s.m, s.n, s.rows_dim == 'k' ? r : s.k, s.layout};
}

}  // namespace

std::int64_t grouped_bytes(const GroupedGemmShape& s, const std::vector<std::int64_t>& rows) {
    std::int64_t b = 0;
    for (std::int64_t r : rows)
        if (r > 0) b += GemmOperands::bytes_for(expert_dims(s, r));
    return b;
}

GroupedOperands make_grouped(const Slot& slot, const GroupedGemmShape& s, const std::vector<std::int64_t>& rows,
                             std::uint64_t seed) {
    GroupedOperands g;
    std::int64_t ox = 0, ow = 0, oc = 0;
    for (std::int64_t r : rows) {
        if (r == 0) continue;
        ExpertProblem p;
        p.dims = expert_dims(s, r);
        p.off_x = ox;
        p.off_w = ow;
        p.off_c = oc;
        ox += p.dims.m * p.dims.k;
        ow += p.dims.n * p.dims.k;
        oc += p.dims.m * p.dims.n;
        g.flops += p.dims.flops();
        g.experts.push_back(p);
    }
    g.seed_x = stream_seed(seed, kRoleGemmX, 1);
    g.seed_w = stream_seed(seed, kRoleGemmW, 1);
    g.x = DeviceBuffer(slot.device, 2 * static_cast<std::uint64_t>(ox));
    g.w = DeviceBuffer(slot.device, 2 * static_cast<std::uint64_t>(ow));
    g.c = DeviceBuffer(slot.device, 2 * static_cast<std::uint64_t>(oc));
    fill_bf16(g.x.as<bf16_bits>(), static_cast<std::uint64_t>(ox), g.seed_x, 0, slot.stream);
    fill_bf16(g.w.as<bf16_bits>(), static_cast<std::uint64_t>(ow), g.seed_w, 0, slot.stream);
    return g;
}

double grouped_error(const GroupedOperands& g, cudaStream_t s) {
    CAL_CUDA(cudaStreamSynchronize(s));
    if (g.experts.empty()) return 0;
    double num = 0, den = 0;
    const std::size_t picks[] = {0, g.experts.size() / 2, g.experts.size() - 1};
    for (std::size_t e : picks) {
        const ExpertProblem& p = g.experts[e];
        for (int t = 0; t < 8; ++t) {
            const std::uint64_t h = mix64(e * 131 + static_cast<std::uint64_t>(t));
            const auto i = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(p.dims.m));
            const auto j = static_cast<std::int64_t>((h >> 32) % static_cast<std::uint64_t>(p.dims.n));
            bf16_bits got = 0;
            CAL_CUDA(
                cudaMemcpy(&got, g.c.as<bf16_bits>() + p.off_c + i * p.dims.n + j, sizeof got, cudaMemcpyDeviceToHost));
            const double out = bf16_to_float(got);
            if (!std::isfinite(out)) return INFINITY;
            const double ref = reference_element(p.dims, g.seed_x, static_cast<std::uint64_t>(p.off_x), g.seed_w,
                                                 static_cast<std::uint64_t>(p.off_w), i, j);
            num += (out - ref) * (out - ref);
            den += ref * ref;
        }
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

GroupedBatched::GroupedBatched(const Slot& slot, cublasHandle_t handle, const GroupedOperands& op)
    : handle_(handle), count_(static_cast<int>(op.experts.size())) {
    const std::size_t E = op.experts.size();
    ta_.resize(E);
    tb_.resize(E);
    m_.resize(E);
    n_.resize(E);
    k_.resize(E);
    lda_.resize(E);
    ldb_.resize(E);
    ldc_.resize(E);
    group_size_.assign(E, 1);
    alpha_.assign(E, 1.0f);
    beta_.assign(E, 0.0f);
    std::vector<const void*> ptrs(3 * E);
    for (std::size_t e = 0; e < E; ++e) {
        const ExpertProblem& p = op.experts[e];
        const CublasArgs a = cublas_args(p.dims);
        ta_[e] = a.ta;
        tb_[e] = a.tb;
        m_[e] = static_cast<int>(a.M);
        n_[e] = static_cast<int>(a.N);
        k_[e] = static_cast<int>(a.K);
        lda_[e] = static_cast<int>(a.lda);
        ldb_[e] = static_cast<int>(a.ldb);
        ldc_[e] = static_cast<int>(a.ldc);
        ptrs[e] = op.w.as<bf16_bits>() + p.off_w;
        ptrs[E + e] = op.x.as<bf16_bits>() + p.off_x;
        ptrs[2 * E + e] = op.c.as<bf16_bits>() + p.off_c;
    }
    pointers_ = DeviceBuffer(slot.device, 3 * E * sizeof(void*));
    CAL_CUDA(cudaMemcpy(pointers_.get(), ptrs.data(), 3 * E * sizeof(void*), cudaMemcpyHostToDevice));
}

cublasStatus_t GroupedBatched::call() const {
#if MOESIM_HAVE_GROUPED_BATCHED
    auto** dev = static_cast<void**>(pointers_.get());
    const auto E = static_cast<std::size_t>(count_);
    return cublasGemmGroupedBatchedEx(handle_, ta_.data(), tb_.data(), m_.data(), n_.data(), k_.data(), alpha_.data(),
                                      reinterpret_cast<const void* const*>(dev), CUDA_R_16BF, lda_.data(),
                                      reinterpret_cast<const void* const*>(dev + E), CUDA_R_16BF, ldb_.data(),
                                      beta_.data(), dev + 2 * E, CUDA_R_16BF, ldc_.data(), count_, group_size_.data(),
                                      CUBLAS_COMPUTE_32F);
#else
    return CUBLAS_STATUS_NOT_SUPPORTED;
#endif
}

}  // namespace moesim::cal
