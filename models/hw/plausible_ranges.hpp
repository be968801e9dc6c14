// How large each physical quantity of a hardware profile can plausibly be, and why. A number that
// parses but lies outside its range is a unit mistake (a capacity in MiB where GiB is meant, a
// bandwidth in MB/s where GB/s is meant) and is refused with the unit its key expects. The
// bounds are wide: an order of magnitude or more around every data-centre GPU shipped to date
// (V100 to GB300), so a new GPU fits and a wrong unit does not.
#pragma once

#include <string_view>

namespace moesim {

struct PlausibleRange {
  double min = 0;
  double max = 0;
  std::string_view unit;    // as the key names it
  std::string_view reason;  // why a value outside is a mistake
};

namespace plausible {

inline constexpr PlausibleRange kPeakTFLOPs{
    10, 20000, "TFLOP/s",
    "dense tensor peaks of data-centre GPUs run from 125 (V100) to 5,000 (GB300 FP8); above 20,000 is GFLOP/s, below "
    "10 is PFLOP/s typed as TFLOP/s"};
inline constexpr PlausibleRange kFp8PeakTFLOPs{
    10, 40000, "TFLOP/s",
    "dense FP8 peaks run from 1,979 (H100) to 5,000 (GB300); above 40,000 is GFLOP/s, below 10 is PFLOP/s"};
inline constexpr PlausibleRange kHbmGBps{
    100, 100000, "GB/s",
    "HBM bandwidth per GPU runs from 900 (V100) to 8,000 (B200, B300); above 100,000 is MB/s, below 100 is TB/s"};
inline constexpr PlausibleRange kCapacityGiB{
    1, 1024, "GiB", "HBM per GPU runs from 16 GiB (V100) to 288 GB (B300); above 1,024 is MiB or MB typed as GiB"};
inline constexpr PlausibleRange kReserveGiB{
    0, 64, "GiB",
    "CUDA context, NCCL buffers and library workspaces measure 0.3-5 GiB per GPU; above 64 is MiB typed as GiB"};
inline constexpr PlausibleRange kHostGpus{
    1, 64, "GPUs",
    "a host holds 1-16 GPUs (HGX 8, a GB200/GB300 compute tray 4); a rack-scale NVLink domain is "
    "interconnect.intra_node.domain_gpus, not the host"};
inline constexpr PlausibleRange kNvlinkGBps{
    1, 10000, "GB/s",
    "NVLink per GPU per direction runs from 150 (NVLink 2) to 900 (NVLink 5); above 10,000 is MB/s or Gb/s"};
inline constexpr PlausibleRange kHostLinkGBps{
    1, 2000, "GB/s",
    "a GPU's host link runs from ~25 (PCIe 4.0 x16) to ~450 (NVLink-C2C) GB/s per direction; above 2,000 is MB/s"};
inline constexpr PlausibleRange kNicGbps{
    1, 10000, "Gb/s", "NIC line rate per GPU runs from 100 to 800 Gb/s (EDR to ConnectX-8); above 10,000 is Mb/s"};
inline constexpr PlausibleRange kBoardPowerW{
    50, 5000, "W",
    "board power limits run from 250 W (A100 PCIe) to 1,400 W (GB300); below 50 is kW typed as W, above 5,000 is mW"};
inline constexpr PlausibleRange kLatencyUs{0, 1000, "us",
                                           "collective and link latencies are 1-100 us; above 1 ms is ns typed as us"};

}  // namespace plausible

}  // namespace moesim
