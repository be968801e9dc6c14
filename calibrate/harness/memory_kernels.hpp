// Memory-bound kernels of a training step, written plainly (16-byte accesses, grid-stride):
// BF16 gradient accumulation into FP32 buckets (the no_sync microbatches of DDP) and a fused
// AdamW update over FP32 shards (the distributed optimizer step). With their checks.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "data_init.hpp"

namespace moesim::cal {

// Threads per block of the memory kernels, and enough blocks to fill the GPU several times over
// for `work_items` (the kernels' loops stride over the rest).
constexpr int kMemoryThreads = 256;
unsigned memory_blocks_for(std::uint64_t work_items);

struct AdamWHyper {
    float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
    float bias1 = 1.0f, bias2 = 1.0f;  // 1 / (1 - beta^step)
};

AdamWHyper adamw_at_step(int step);

// Decoupled weight decay (Loshchilov & Hutter), bias-corrected moments; the same code on both
// sides so the check can demand near-exact agreement.
CAL_HD void adamw_element(float& p, float g, float& m, float& v, const AdamWHyper& h) {
    m = h.beta1 * m + (1.0f - h.beta1) * g;
    v = h.beta2 * v + (1.0f - h.beta2) * g * g;
    const float mhat = m * h.bias1, vhat = v * h.bias2;
    p = p - h.lr * (mhat / (sqrtf(vhat) + h.eps) + h.weight_decay * p);
}

// acc[i] += float(grad[i]); bytes moved: 2 (read bf16) + 4 (read fp32) + 4 (write fp32).
void grad_accum_bf16_to_f32(float* acc, const bf16_bits* grad, std::uint64_t n, cudaStream_t s);
constexpr double kGradAccumBytesPerElement = 10.0;

// Reads p, g, m, v and writes p, m, v: 28 bytes per element.
void adamw_f32(float* p, const float* g, float* m, float* v, std::uint64_t n, const AdamWHyper& h, cudaStream_t s);
constexpr double kAdamWBytesPerElement = 28.0;

// After exactly one grad_accum from acc = stream(seed_acc), grad = bf16 stream(seed_grad).
void check_grad_accum(const float* acc, std::uint64_t n, std::uint64_t seed_acc, std::uint64_t seed_grad,
                      unsigned long long* counter, cudaStream_t s);

// After exactly one adamw_f32 from p, g, m = streams, v = |stream| * v_scale.
void check_adamw(const float* p, const float* m, const float* v, std::uint64_t n, std::uint64_t seed_p,
                 std::uint64_t seed_g, std::uint64_t seed_m, std::uint64_t seed_v, float v_scale, const AdamWHyper& h,
                 unsigned long long* counter, cudaStream_t s);

// The AdamW checks' starting state over n elements: p, m = their streams, v = |stream| * v_scale
// (g is filled once by the caller: stream kRoleAdamG).
void reset_adamw_state(float* p, float* m, float* v, std::uint64_t n, std::uint64_t seed, float v_scale,
                       cudaStream_t s);
// check_adamw over the first n elements after one update from reset_adamw_state.
void check_adamw_state(const float* p, const float* m, const float* v, std::uint64_t n, std::uint64_t seed,
                       float v_scale, const AdamWHyper& h, unsigned long long* counter, cudaStream_t s);

}  // namespace moesim::cal
