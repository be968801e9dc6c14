// Memory-bound kernels (see memory_kernels.hpp).
#include "errors.hpp"
#include "memory_kernels.hpp"

namespace moesim::cal {
namespace {

constexpr int kThreads = kMemoryThreads;
unsigned blocks_for(std::uint64_t work_items) { return memory_blocks_for(work_items); }

__global__ void accum_kernel(float* __restrict__ acc, const bf16_bits* __restrict__ grad, std::uint64_t n) {
    const std::uint64_t vecs = n / 8;
    const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < vecs; i += stride) {
        const uint4 g = reinterpret_cast<const uint4*>(grad)[i];  // 8 bf16
        float4 a0 = reinterpret_cast<float4*>(acc)[2 * i];
        float4 a1 = reinterpret_cast<float4*>(acc)[2 * i + 1];
        a0.x += __uint_as_float(g.x << 16);
        a0.y += __uint_as_float(g.x & 0xFFFF0000u);
        a0.z += __uint_as_float(g.y << 16);
        a0.w += __uint_as_float(g.y & 0xFFFF0000u);
        a1.x += __uint_as_float(g.z << 16);
        a1.y += __uint_as_float(g.z & 0xFFFF0000u);
        a1.z += __uint_as_float(g.w << 16);
        a1.w += __uint_as_float(g.w & 0xFFFF0000u);
        reinterpret_cast<float4*>(acc)[2 * i] = a0;
        reinterpret_cast<float4*>(acc)[2 * i + 1] = a1;
    }
    for (std::uint64_t i = vecs * 8 + blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += stride)
        acc[i] += bf16_to_float(grad[i]);
}

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, std::uint64_t n, AdamWHyper h) {
    const std::uint64_t vecs = n / 4;
    const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < vecs; i += stride) {
        float4 pp = reinterpret_cast<float4*>(p)[i];
        const float4 gg = reinterpret_cast<const float4*>(g)[i];
        float4 mm = reinterpret_cast<float4*>(m)[i];
        float4 vv = reinterpret_cast<float4*>(v)[i];
        adamw_element(pp.x, gg.x, mm.x, vv.x, h);
        adamw_element(pp.y, gg.y, mm.y, vv.y, h);
        adamw_element(pp.z, gg.z, mm.z, vv.z, h);
        adamw_element(pp.w, gg.w, mm.w, vv.w, h);
        reinterpret_cast<float4*>(p)[i] = pp;
        reinterpret_cast<float4*>(m)[i] = mm;
        reinterpret_cast<float4*>(v)[i] = vv;
    }
    for (std::uint64_t i = vecs * 4 + blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n; i += stride)
        adamw_element(p[i], g[i], m[i], v[i], h);
}

__global__ void check_accum_kernel(const float* acc, std::uint64_t n, std::uint64_t sa, std::uint64_t sg,
                                   unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        if (!(acc[i] == rand_value(sa, i) + bf16_to_float(rand_bf16(sg, i)))) ++bad;
    if (bad) atomicAdd(counter, bad);
}

__global__ void check_adamw_kernel(const float* p, const float* m, const float* v, std::uint64_t n, std::uint64_t sp,
                                   std::uint64_t sg, std::uint64_t sm, std::uint64_t sv, float v_scale, AdamWHyper h,
                                   unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        float ep = rand_value(sp, i), em = rand_value(sm, i), ev = fabsf(rand_value(sv, i)) * v_scale;
        adamw_element(ep, rand_value(sg, i), em, ev, h);
        auto close = [](float a, float b) { return fabsf(a - b) <= 1e-6f * fabsf(b) + 1e-30f; };
        if (!close(p[i], ep) || !close(m[i], em) || !close(v[i], ev)) ++bad;
    }
    if (bad) atomicAdd(counter, bad);
}

}  // namespace

unsigned memory_blocks_for(std::uint64_t work_items) {
    int dev = 0, sms = 0;
    CAL_CUDA(cudaGetDevice(&dev));
    CAL_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const std::uint64_t want = (work_items + kMemoryThreads - 1) / kMemoryThreads;
    const std::uint64_t most = static_cast<std::uint64_t>(sms) * 16;
    return static_cast<unsigned>(want < most ? (want ? want : 1) : most);
}

AdamWHyper adamw_at_step(int step) {
    AdamWHyper h;
    h.bias1 = 1.0f / (1.0f - std::pow(h.beta1, static_cast<float>(step)));
    h.bias2 = 1.0f / (1.0f - std::pow(h.beta2, static_cast<float>(step)));
    return h;
}

void grad_accum_bf16_to_f32(float* acc, const bf16_bits* grad, std::uint64_t n, cudaStream_t s) {
    accum_kernel<<<blocks_for(n / 8 + 1), kThreads, 0, s>>>(acc, grad, n);
    CAL_CHECK_LAUNCH();
}

void adamw_f32(float* p, const float* g, float* m, float* v, std::uint64_t n, const AdamWHyper& h, cudaStream_t s) {
    adamw_kernel<<<blocks_for(n / 4 + 1), kThreads, 0, s>>>(p, g, m, v, n, h);
    CAL_CHECK_LAUNCH();
}

void check_grad_accum(const float* acc, std::uint64_t n, std::uint64_t seed_acc, std::uint64_t seed_grad,
                      unsigned long long* counter, cudaStream_t s) {
    check_accum_kernel<<<blocks_for(n), kThreads, 0, s>>>(acc, n, seed_acc, seed_grad, counter);
    CAL_CHECK_LAUNCH();
}

void check_adamw(const float* p, const float* m, const float* v, std::uint64_t n, std::uint64_t seed_p,
                 std::uint64_t seed_g, std::uint64_t seed_m, std::uint64_t seed_v, float v_scale, const AdamWHyper& h,
                 unsigned long long* counter, cudaStream_t s) {
    check_adamw_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, m, v, n, seed_p, seed_g, seed_m, seed_v, v_scale, h,
                                                          counter);
    CAL_CHECK_LAUNCH();
}

void reset_adamw_state(float* p, float* m, float* v, std::uint64_t n, std::uint64_t seed, float v_scale,
                       cudaStream_t s) {
    fill_f32(p, n, stream_seed(seed, kRoleAdamP, 0), 0, s);
    fill_f32(m, n, stream_seed(seed, kRoleAdamM, 0), 0, s);
    fill_f32_abs(v, n, stream_seed(seed, kRoleAdamV, 0), v_scale, s);
}

void check_adamw_state(const float* p, const float* m, const float* v, std::uint64_t n, std::uint64_t seed,
                       float v_scale, const AdamWHyper& h, unsigned long long* counter, cudaStream_t s) {
    check_adamw(p, m, v, n, stream_seed(seed, kRoleAdamP, 0), stream_seed(seed, kRoleAdamG, 0),
                stream_seed(seed, kRoleAdamM, 0), stream_seed(seed, kRoleAdamV, 0), v_scale, h, counter, s);
}

}  // namespace moesim::cal
