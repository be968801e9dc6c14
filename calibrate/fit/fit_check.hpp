// Checks a fit can fail without an error: measurements of another GPU than the base profile's,
// and a fitted profile whose cost model (its own algorithm pick included) does not give back the
// measured large-message time.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "calibrate/fit/fitted_fields.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim::fit {

// A GPU name's model code, the first token holding a digit ("H100" of "NVIDIA H100 80GB HBM3",
// "A100" of "NVIDIA A100-SXM4-80GB", "1080" of "NVIDIA GeForce GTX 1080"), and its board variant
// tokens PCIE and NVL (H100 PCIe, H200 NVL: the same chip at other clocks, power and links).
struct GpuIdentity {
  std::string code;
  std::set<std::string> variants;
};
GpuIdentity gpu_identity(const std::string& name);
bool same_gpu(const std::string& measured, const std::string& profile_model);

// Throws InputError (FILE, environment.device.name) when a file's device is another GPU than
// the base profile's gpu.model, unless options.force_device (then a warning). A file that names
// no device gets a warning.
void check_devices(const FitInputs& in, const std::string& base_file, std::vector<std::string>& warnings);

// For every mapped collective curve: the fitted profile's cost of its largest size, with the
// algorithm the cost model picks, into the curve's report; a warning when it misses the
// measured busbw by more than kPickTolerance.
void check_against_cost_model(const HardwareProfile& fitted, std::vector<CurveReport>& curves,
                              std::vector<std::string>& warnings);

}  // namespace moesim::fit
