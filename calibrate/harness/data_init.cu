// Fill kernels for deterministic random data (see data_init.hpp).
#include "data_init.hpp"
#include "errors.hpp"

namespace moesim::cal {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::uint64_t n) {
    const std::uint64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 65536 ? (b ? b : 1) : 65536);  // grid-stride beyond this
}

__global__ void fill_f32_kernel(float* p, std::uint64_t n, std::uint64_t seed, std::uint64_t first) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        p[i] = rand_value(seed, first + i);
}

__global__ void fill_bf16_kernel(bf16_bits* p, std::uint64_t n, std::uint64_t seed, std::uint64_t first) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        p[i] = rand_bf16(seed, first + i);
}

__global__ void fill_f32_abs_kernel(float* p, std::uint64_t n, std::uint64_t seed, float scale) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        p[i] = fabsf(rand_value(seed, i)) * scale;
}

}  // namespace

void fill_f32(float* ptr, std::uint64_t n, std::uint64_t seed, std::uint64_t first, cudaStream_t s) {
    if (!n) return;
    fill_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(ptr, n, seed, first);
    CAL_CHECK_LAUNCH();
}

void fill_bf16(bf16_bits* ptr, std::uint64_t n, std::uint64_t seed, std::uint64_t first, cudaStream_t s) {
    if (!n) return;
    fill_bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(ptr, n, seed, first);
    CAL_CHECK_LAUNCH();
}

void fill_f32_abs(float* ptr, std::uint64_t n, std::uint64_t seed, float scale, cudaStream_t s) {
    if (!n) return;
    fill_f32_abs_kernel<<<blocks_for(n), kThreads, 0, s>>>(ptr, n, seed, scale);
    CAL_CHECK_LAUNCH();
}

void poison(void* ptr, std::uint64_t bytes, cudaStream_t s) {
    if (!bytes) return;
    CAL_CUDA(cudaMemsetAsync(ptr, 0xFF, bytes, s));
}

}  // namespace moesim::cal
