// Correctness checks of results on the device, in the spirit of nccl-tests' -c: outputs are
// poisoned before a checked run, then every element is compared with the value it must hold,
// recomputed from the deterministic data streams (data_init.hpp). Mismatches (NaN included)
// are counted in a device counter.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "data_init.hpp"

namespace moesim::cal {

// A mismatch counter in device memory of one GPU.
class DeviceCounter {
  public:
    explicit DeviceCounter(int device);
    ~DeviceCounter();
    DeviceCounter(const DeviceCounter&) = delete;
    DeviceCounter& operator=(const DeviceCounter&) = delete;
    void reset(cudaStream_t s);
    std::uint64_t read(cudaStream_t s);  // synchronises s
    unsigned long long* ptr() const { return ptr_; }

  private:
    int device_;
    unsigned long long* ptr_ = nullptr;
};

// out[i] must equal scale * sum over r < ranks of rand_value(stream_seed(base, role, r), first + i),
// within FP32 summation-order tolerance.
void check_sum_f32(const float* out, std::uint64_t n, std::uint64_t base, std::uint64_t role, int ranks,
                   std::uint64_t first, float scale, unsigned long long* counter, cudaStream_t s);

// out[i] must equal rand_bf16(seed, first + i) exactly.
void check_bf16(const bf16_bits* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first,
                unsigned long long* counter, cudaStream_t s);

// out[i] must equal rand_value(seed, first + i) exactly.
void check_f32(const float* out, std::uint64_t n, std::uint64_t seed, std::uint64_t first, unsigned long long* counter,
               cudaStream_t s);

}  // namespace moesim::cal
