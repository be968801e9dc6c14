// Deterministic random data. Every element is a pure function of (seed, index), so device fill
// kernels, device check kernels and host references agree without copying data around. Values
// are never zero (magnitude in [0.5, 1), random sign): zeros hide unwritten outputs and can run
// faster than real data. BF16 is handled as raw 16-bit patterns so host code needs no CUDA types.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CAL_HD __host__ __device__ __forceinline__
#else
#define CAL_HD inline
#endif

namespace moesim::cal {

using bf16_bits = std::uint16_t;

// splitmix64 finaliser: a well-mixed 64-bit hash.
CAL_HD std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The value of element `i` of the stream `seed`: +-[0.5, 1).
CAL_HD float rand_value(std::uint64_t seed, std::uint64_t i) {
    const std::uint64_t h = mix64(mix64(seed) ^ i);
    const float mag = 0.5f + static_cast<float>(h >> 40) * (0.5f / 16777216.0f);
    return (h & 1u) ? -mag : mag;
}

CAL_HD float bf16_to_float(bf16_bits b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// Round to nearest even (inputs here are finite).
CAL_HD bf16_bits float_to_bf16(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<bf16_bits>(u >> 16);
}

CAL_HD bf16_bits rand_bf16(std::uint64_t seed, std::uint64_t i) { return float_to_bf16(rand_value(seed, i)); }

// Roles of the data streams, so that no two buffers of a run share values.
enum Role : std::uint64_t {
    kRoleAllReduce = 1,
    kRoleBuckets,
    kRoleAllGather,
    kRoleReduceScatter,
    kRoleAllToAll,
    kRoleSendRecv,
    kRoleGemmX,
    kRoleGemmW,
    kRoleMemSrc,
    kRoleMemAcc,
    kRoleMemGrad,
    kRoleAdamP,
    kRoleAdamG,
    kRoleAdamM,
    kRoleAdamV,
    kRoleInterfere
};

// Seeds of distinct buffers: keep streams apart even for neighbouring ranks and roles.
CAL_HD std::uint64_t stream_seed(std::uint64_t base, std::uint64_t role, std::uint64_t rank) {
    return mix64(base * 1000003ull + role * 7919ull + rank);
}

// Fill kernels (data_init.cu). `first` is the index of ptr[0] within the stream, so a buffer
// can hold a slice of a longer stream.
void fill_f32(float* ptr, std::uint64_t n, std::uint64_t seed, std::uint64_t first, cudaStream_t s);
void fill_bf16(bf16_bits* ptr, std::uint64_t n, std::uint64_t seed, std::uint64_t first, cudaStream_t s);
// Positive values (AdamW second moments): |rand| * scale.
void fill_f32_abs(float* ptr, std::uint64_t n, std::uint64_t seed, float scale, cudaStream_t s);
// Poisons a buffer with all-ones bytes (NaN in FP32 and BF16) before a correctness run.
void poison(void* ptr, std::uint64_t bytes, cudaStream_t s);

}  // namespace moesim::cal
