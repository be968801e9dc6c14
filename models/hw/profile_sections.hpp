// Reading the pieces of a hardware profile: quantities and tables with provenance, and the
// compute and interconnect sections (hardware_profile.cpp reads the rest).
#pragma once

#include <string>
#include <string_view>

#include "models/common/json_reader.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/hw/plausible_ranges.hpp"

namespace moesim::profile_detail {

// {"value": x, "kind": "...", "source": "..."}: no bare numbers, so that every figure the tool
// prints can be traced.
Quantity quantity(const JsonReader& parent, std::string_view key, Range range);
std::optional<Quantity> optional_quantity(const JsonReader& parent, std::string_view key, Range range);
// Why `value` is outside `plausible` (its unit, the allowed range and the reason), or "".
std::string implausible(double value, const PlausibleRange& plausible);
// The same for a physical quantity: outside `plausible`, refused with its unit and the reason.
Quantity quantity(const JsonReader& parent, std::string_view key, const PlausibleRange& plausible);
std::optional<Quantity> optional_quantity(const JsonReader& parent, std::string_view key,
                                          const PlausibleRange& plausible);
// {"kind", "source", "points": [{x_key: .., y_key: ..}, ...]}: one provenance for the whole
// curve; at least one point, x strictly increasing.
ProfileTable table(const JsonReader& parent, std::string_view key, std::string_view x_key, std::string_view y_key,
                   Range y_range);

// NCCL's channel cap (NCCL_MAX_NCHANNELS, src/include/device.h MAXCHANNELS = 64).
inline const Range kCtas{1.0, 64.0, false};

ComputeSpec parse_compute(const JsonReader& compute);
InterconnectSpec parse_interconnect(const JsonReader& interconnect);
// interconnect.ep_transports (ep_transport_sections.cpp).
EpTransportSpecs parse_ep_transports(const JsonReader& ep);
// No kernel runs faster than the GPU's nominal peak or streams faster than its HBM.
void check_rates_under_peaks(const HardwareProfile& h, const JsonReader& in);

}  // namespace moesim::profile_detail
