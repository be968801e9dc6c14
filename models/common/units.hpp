// Unit constants and element sizes. Units live in key names and are converted once, at parse time.
#pragma once

#include <cstdint>
#include <string_view>

#include "models/common/enum_names.hpp"

namespace moesim {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;  // decimal, as in datasheets and nccl-tests' GB/s

// A count as a double, for the byte and FLOP arithmetic that mixes counts with sizes.
constexpr double dbl(std::int64_t v) { return static_cast<double>(v); }

enum class DType { fp32, bf16, fp16, fp8 };

// Bytes per element (IEEE 754 binary32 / bfloat16 / binary16 / OCP FP8 E4M3).
constexpr double bytes_of(DType t) {
  switch (t) {
    case DType::fp32: return 4.0;
    case DType::bf16: return 2.0;
    case DType::fp16: return 2.0;
    case DType::fp8: return 1.0;
  }
  return 0.0;
}

// A dropout mask element: torch.bool, one byte (what fused dropout kernels save and read back).
inline constexpr double kMaskBytes = 1.0;

inline constexpr EnumNames<DType, 4> kDTypeNames{
    "dtype", {{{DType::fp32, "fp32"}, {DType::bf16, "bf16"}, {DType::fp16, "fp16"}, {DType::fp8, "fp8"}}}};
constexpr std::string_view name_of(DType value) { return kDTypeNames.name(value); }

}  // namespace moesim
