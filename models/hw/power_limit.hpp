// GPUs run under a board power limit below the default (gpu.power_limit_W < gpu.board_power_W,
// nvidia-smi -pl): the power limiter lowers the SM clock until the board fits, so every
// compute-bound kernel slows by the same factor (Olmo-core MoE report, power appendix: on B300 a
// grouped GEMM's TFLOP/s per MHz stays at 1.16-1.19 while the limiter moves the clock), while
// HBM-bound kernels and the links keep their rates (the limiter acts on the SM clock). The factor
// is the profile's measured GEMM rate at the limit over its rate at the default
// (compute.gemm_TFLOPs_by_power_limit, linear in watts between its points); a profile without
// such measurements, or a limit outside them, is refused.
#pragma once

#include <optional>

#include "models/common/json_reader.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim {

// gpu.power_limit_W, a plain number of watts (absent: nullopt), refused outside plausible watts.
std::optional<double> read_power_limit_W(const JsonReader& gpu);

// Checks compute.gemm_TFLOPs_by_power_limit's watts (profile_sections.cpp checks its rates), then
// scales the compute-bound rates of `h` (dense GEMM table and ceiling, attention rates: the
// grouped-GEMM and FP8 tables are ratios to them) and records h.power_limit; `in` is the
// profile document, for errors.
void apply_power_limit(HardwareProfile& h, const JsonReader& in);

}  // namespace moesim
