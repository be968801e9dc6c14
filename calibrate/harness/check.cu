// Device-side correctness checks (see check.hpp).
#include "check.hpp"

#include <exception>

#include "errors.hpp"

namespace moesim::cal {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::uint64_t n) {
    const std::uint64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<unsigned>(b < 32768 ? (b ? b : 1) : 32768);
}

__global__ void sum_f32_kernel(const float* out, std::uint64_t n, std::uint64_t base, std::uint64_t role, int ranks,
                               std::uint64_t first, float scale, float tol, unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        float expect = 0.0f;
        for (int r = 0; r < ranks; ++r) expect += rand_value(stream_seed(base, role, r), first + i);
        expect *= scale;
        if (!(fabsf(out[i] - expect) <= tol)) ++bad;  // NaN fails
    }
    if (bad) atomicAdd(counter, bad);
}

__global__ void bf16_kernel(const bf16_bits* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first,
                            unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        if (out[i] != rand_bf16(seed, first + i)) ++bad;
    if (bad) atomicAdd(counter, bad);
}

__global__ void f32_kernel(const float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first,
                           unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        if (!(out[i] == rand_value(seed, first + i))) ++bad;
    if (bad) atomicAdd(counter, bad);
}

}  // namespace

DeviceCounter::DeviceCounter(int device) : device_(device) {
    CAL_CUDA(cudaSetDevice(device_));
    CAL_CUDA(cudaMalloc(&ptr_, sizeof(unsigned long long)));
}

DeviceCounter::~DeviceCounter() {
    if (ptr_ && std::uncaught_exceptions() == 0) {  // leak while unwinding (see DeviceBuffer)
        cudaSetDevice(device_);
        cudaFree(ptr_);
    }
}

void DeviceCounter::reset(cudaStream_t s) { CAL_CUDA(cudaMemsetAsync(ptr_, 0, sizeof(unsigned long long), s)); }

std::uint64_t DeviceCounter::read(cudaStream_t s) {
    unsigned long long v = 0;
    CAL_CUDA(cudaMemcpyAsync(&v, ptr_, sizeof v, cudaMemcpyDeviceToHost, s));
    CAL_CUDA(cudaStreamSynchronize(s));
    return v;
}

void check_sum_f32(const float* out, std::uint64_t n, std::uint64_t base, std::uint64_t role, int ranks,
                   std::uint64_t first, float scale, unsigned long long* counter, cudaStream_t s) {
    if (!n) return;
    // Summation order differs between NCCL algorithms: allow n^2 ulps of the magnitude (<= n).
    const float tol = scale * (1.2e-7f * float(ranks) * float(ranks) + 1e-6f);
    sum_f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, n, base, role, ranks, first, scale, tol, counter);
    CAL_CHECK_LAUNCH();
}

void check_bf16(const bf16_bits* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first,
                unsigned long long* counter, cudaStream_t s) {
    if (!n) return;
    bf16_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, n, seed, first, counter);
    CAL_CHECK_LAUNCH();
}

void check_f32(const float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first, unsigned long long* counter,
               cudaStream_t s) {
    if (!n) return;
    f32_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, n, seed, first, counter);
    CAL_CHECK_LAUNCH();
}

}  // namespace moesim::cal
