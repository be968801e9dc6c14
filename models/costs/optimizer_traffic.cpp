#include "models/costs/optimizer_traffic.hpp"

namespace moesim {

UpdateTraffic update_traffic(const OptimizerSpec& o, DType grad_dtype) {
  const double m = bytes_of(o.main_weight_dtype), s = bytes_of(o.state_dtype), g = bytes_of(grad_dtype);
  // Temporaries of the foreach implementations are FP32 tensors the size of the parameter.
  const double t = bytes_of(DType::fp32);
  // One fused kernel (and every optimizer but AdamW here): read the gradient, read and write the
  // main weight and each state once. Its own efficiency is the profile's optimizer class.
  const UpdateTraffic fused{g + 2 * m + 2 * o.states() * s, MemoryKernel::optimizer};
  if (o.kind != OptimizerKind::adamw || o.kernels == OptimizerKernels::fused) return fused;
  if (o.kernels == OptimizerKernels::foreach) {
    // torch.optim.adamw _multi_tensor_adamw: param.mul_ (weight decay) 2m; exp_avg.lerp_(grad) 2s+g;
    // exp_avg_sq.mul_ 2s; exp_avg_sq.addcmul_(grad, grad) 2s+2g; sqrt -> temp s+t; div_ 2t;
    // add_(eps) 2t; param.addcdiv_(exp_avg, temp) 2m+s+t. Simple streaming passes.
    return {4 * m + 8 * s + 3 * g + 6 * t, MemoryKernel::elementwise};
  }
  // olmo_core/optim/adamw.py foreach_adamw_step: params mul_ 2m; exp_avgs mul_ 2s; grads*w1 ->
  // temp g+t; exp_avgs add_ 2s+t; grads*grads -> temp 2g+t; exp_avg_sqs mul_ 2s; temp*w2 2t;
  // exp_avg_sqs add_ 2s+t; sqrt -> denoms s+t; div_ 2t; add_(eps) 2t; exp_avgs/denoms -> updates
  // s+2t; updates mul_ 2t; params add_ 2m+t. Simple streaming passes.
  return {4 * m + 10 * s + 3 * g + 16 * t, MemoryKernel::elementwise};
}

}  // namespace moesim
