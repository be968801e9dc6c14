// Memory-class kernels (see memory_classes.hpp).
#include <cfloat>

#include "errors.hpp"
#include "memory_classes.hpp"

namespace moesim::cal {
namespace {

constexpr int kThreads = kMemoryThreads;  // the softmax's shared-memory reduction is sized by it
unsigned blocks_for(std::uint64_t work_items) { return memory_blocks_for(work_items); }

// Grid-stride over [0, n): first index and stride of this thread.
__device__ std::uint64_t first_index() { return blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; }
__device__ std::uint64_t grid_stride() { return std::uint64_t(gridDim.x) * blockDim.x; }

__global__ void cast_kernel(float* __restrict__ out, const bf16_bits* __restrict__ in, std::uint64_t n) {
    for (std::uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = bf16_to_float(in[i]);
}

__global__ void check_cast_kernel(const float* out, std::uint64_t n, std::uint64_t seed, unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = first_index(); i < n; i += grid_stride())
        if (!(out[i] == bf16_to_float(rand_bf16(seed, i)))) ++bad;
    if (bad) atomicAdd(counter, bad);
}

// 16-byte vectors of 8 BF16 when the row width allows, else single elements.
__global__ void permute_kernel(bf16_bits* __restrict__ out, const bf16_bits* __restrict__ in, std::uint64_t rows,
                               std::uint64_t d) {
    if (d % 8 == 0) {
        const std::uint64_t per_row = d / 8;
        for (std::uint64_t i = first_index(); i < rows * per_row; i += grid_stride()) {
            const std::uint64_t r = i / per_row, c = i % per_row;
            reinterpret_cast<uint4*>(out)[i] = reinterpret_cast<const uint4*>(in)[permuted_row(r, rows) * per_row + c];
        }
        return;
    }
    for (std::uint64_t i = first_index(); i < rows * d; i += grid_stride())
        out[i] = in[permuted_row(i / d, rows) * d + i % d];
}

__global__ void check_permute_kernel(const bf16_bits* out, std::uint64_t rows, std::uint64_t d, std::uint64_t seed,
                                     unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t i = first_index(); i < rows * d; i += grid_stride())
        if (out[i] != rand_bf16(seed, permuted_row(i / d, rows) * d + i % d)) ++bad;
    if (bad) atomicAdd(counter, bad);
}

// Online softmax statistics (running max and sum of exp(x - max)), merged pairwise.
struct RowStats {
    float max, sum;
};
__device__ RowStats merge(RowStats a, RowStats b) {
    const float m = fmaxf(a.max, b.max);
    return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

// One block per row (grid-stride over rows): statistics, a shared-memory tree reduction, then the
// normalised row.
__global__ void softmax_kernel(bf16_bits* __restrict__ out, const bf16_bits* __restrict__ in, std::uint64_t rows,
                               std::uint64_t cols) {
    __shared__ RowStats part[kThreads];
    for (std::uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const bf16_bits* row = in + r * cols;
        RowStats s{-FLT_MAX, 0.0f};
        for (std::uint64_t c = threadIdx.x; c < cols; c += blockDim.x) s = merge(s, {bf16_to_float(row[c]), 1.0f});
        part[threadIdx.x] = s;
        __syncthreads();
        for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) part[threadIdx.x] = merge(part[threadIdx.x], part[threadIdx.x + half]);
            __syncthreads();
        }
        const RowStats all = part[0];
        __syncthreads();  // part is reused by the next row
        for (std::uint64_t c = threadIdx.x; c < cols; c += blockDim.x)
            out[r * cols + c] = float_to_bf16(__expf(bf16_to_float(row[c]) - all.max) / all.sum);
    }
}

__global__ void check_softmax_kernel(const bf16_bits* out, std::uint64_t rows, std::uint64_t cols, std::uint64_t seed,
                                     unsigned long long* counter) {
    unsigned long long bad = 0;
    for (std::uint64_t r = first_index(); r < rows; r += grid_stride()) {
        float m = -FLT_MAX, sum = 0.0f;
        for (std::uint64_t c = 0; c < cols; ++c) m = fmaxf(m, bf16_to_float(rand_bf16(seed, r * cols + c)));
        for (std::uint64_t c = 0; c < cols; ++c) sum += expf(bf16_to_float(rand_bf16(seed, r * cols + c)) - m);
        for (std::uint64_t c = 0; c < cols; ++c) {
            const float ref = expf(bf16_to_float(rand_bf16(seed, r * cols + c)) - m) / sum;
            const float got = bf16_to_float(out[r * cols + c]);
            if (!(fabsf(got - ref) <= ref / 128.0f)) ++bad;
        }
    }
    if (bad) atomicAdd(counter, bad);
}

// multi_tensor_apply's pattern: each block takes whole chunks; within a chunk, threads stride.
__global__ void adamw_chunks_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                                    float* __restrict__ v, const TensorChunk* chunks, std::uint64_t count,
                                    AdamWHyper h) {
    for (std::uint64_t k = blockIdx.x; k < count; k += gridDim.x) {
        const TensorChunk c = chunks[k];
        for (std::uint64_t i = c.offset + threadIdx.x; i < c.offset + c.length; i += blockDim.x)
            adamw_element(p[i], g[i], m[i], v[i], h);
    }
}

}  // namespace

void cast_bf16_to_f32(float* out, const bf16_bits* in, std::uint64_t n, cudaStream_t s) {
    cast_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, in, n);
    CAL_CHECK_LAUNCH();
}

void check_cast(const float* out, std::uint64_t n, std::uint64_t seed, unsigned long long* counter, cudaStream_t s) {
    check_cast_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, n, seed, counter);
    CAL_CHECK_LAUNCH();
}

void permute_rows_bf16(bf16_bits* out, const bf16_bits* in, std::uint64_t rows, std::uint64_t d, cudaStream_t s) {
    permute_kernel<<<blocks_for(rows * d / 8 + 1), kThreads, 0, s>>>(out, in, rows, d);
    CAL_CHECK_LAUNCH();
}

void check_permute(const bf16_bits* out, std::uint64_t rows, std::uint64_t d, std::uint64_t seed,
                   unsigned long long* counter, cudaStream_t s) {
    check_permute_kernel<<<blocks_for(rows * d), kThreads, 0, s>>>(out, rows, d, seed, counter);
    CAL_CHECK_LAUNCH();
}

void softmax_rows_bf16(bf16_bits* out, const bf16_bits* in, std::uint64_t rows, std::uint64_t cols, cudaStream_t s) {
    softmax_kernel<<<blocks_for(rows * kThreads), kThreads, 0, s>>>(out, in, rows, cols);
    CAL_CHECK_LAUNCH();
}

void check_softmax_rows(const bf16_bits* out, std::uint64_t rows, std::uint64_t cols, std::uint64_t seed,
                        unsigned long long* counter, cudaStream_t s) {
    check_softmax_kernel<<<blocks_for(rows), kThreads, 0, s>>>(out, rows, cols, seed, counter);
    CAL_CHECK_LAUNCH();
}

void adamw_f32_chunks(float* p, const float* g, float* m, float* v, const TensorChunk* chunks,
                      std::uint64_t chunk_count, const AdamWHyper& h, cudaStream_t s) {
    adamw_chunks_kernel<<<blocks_for(chunk_count * kThreads), kThreads, 0, s>>>(p, g, m, v, chunks, chunk_count, h);
    CAL_CHECK_LAUNCH();
}

}  // namespace moesim::cal
