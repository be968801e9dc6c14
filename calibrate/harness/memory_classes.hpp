// Memory-bound kernels of the simulator's other memory classes (models/common/cost_types.hpp
// MemoryKernel), written plainly, with their device checks: a BF16 -> FP32 cast (elementwise), the
// MoE permute as a row gather (permute), a row softmax over the vocabulary (the unfused
// cross-entropy's pass over the logits) and AdamW over a list of tensors in one launch
// (multi_tensor_apply's pattern: the optimizer step).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "data_init.hpp"
#include "memory_kernels.hpp"

namespace moesim::cal {

// out[i] = float(in[i]): 2 bytes read, 4 written.
void cast_bf16_to_f32(float* out, const bf16_bits* in, std::uint64_t n, cudaStream_t s);
constexpr double kCastBytesPerElement = 6.0;
// out must hold float(rand_bf16(seed, i)) exactly.
void check_cast(const float* out, std::uint64_t n, std::uint64_t seed, unsigned long long* counter, cudaStream_t s);

// The row out row r takes: a fixed permutation of [0, rows) (2^31 - 1 is prime and above any row
// count here, so r -> r * p mod rows is a bijection).
CAL_HD std::uint64_t permuted_row(std::uint64_t r, std::uint64_t rows) { return (r * 2147483647ull + 1) % rows; }
// out[r, :] = in[permuted_row(r), :] over rows of d BF16: 2 bytes read and 2 written per element.
void permute_rows_bf16(bf16_bits* out, const bf16_bits* in, std::uint64_t rows, std::uint64_t d, cudaStream_t s);
constexpr double kPermuteBytesPerElement = 4.0;
void check_permute(const bf16_bits* out, std::uint64_t rows, std::uint64_t d, std::uint64_t seed,
                   unsigned long long* counter, cudaStream_t s);

// out[r, :] = softmax(in[r, :]) over rows of `cols` BF16 logits, BF16 out. The row is read twice
// (max and sum, then normalise; a vocabulary row of 100352 BF16 is 196 KiB, so the second read is
// mostly from L2): bytes counted once each way, 4 per element.
void softmax_rows_bf16(bf16_bits* out, const bf16_bits* in, std::uint64_t rows, std::uint64_t cols, cudaStream_t s);
constexpr double kSoftmaxBytesPerElement = 4.0;
// Within 1/128 relative of a sequential FP32 softmax (BF16 output rounding is 1/512).
void check_softmax_rows(const bf16_bits* out, std::uint64_t rows, std::uint64_t cols, std::uint64_t seed,
                        unsigned long long* counter, cudaStream_t s);

// One slice of one tensor in the flat optimizer buffers.
struct TensorChunk {
    std::uint64_t offset = 0, length = 0;
};
// AdamW over `chunk_count` chunks (device array) of the flat p, g, m, v buffers in one launch;
// 28 bytes per element as adamw_f32.
void adamw_f32_chunks(float* p, const float* g, float* m, float* v, const TensorChunk* chunks,
                      std::uint64_t chunk_count, const AdamWHyper& h, cudaStream_t s);

}  // namespace moesim::cal
