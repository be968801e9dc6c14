// Synthetic moesim-measurements/1 documents generated from known parameters plus seeded
// log-normal noise, for testing that the fitter recovers what went in. Never calibration data.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace moesim::test {

struct SyntheticTruth {
  // Collectives on one 8-GPU NVLink domain of a B300 profile (900 GB/s per direction, hop 3.4 us).
  double nvlink_GBps = 900, hop_us = 3.4;
  double ring_base_us = 10;  // intercept = base + steps x hop
  double p2p_base_us = 12;
  std::map<std::string, double> efficiency = {
      {"all_reduce", 0.80}, {"all_gather", 0.75}, {"reduce_scatter", 0.74}, {"all_to_all", 0.70}};
  // Two domains x 8 over 800 Gb/s rails: NIC efficiency and network hop latency.
  double nic_efficiency = 0.85, net_hop_us = 12, nic_line_GBps = 100;
  // Dense GEMM TFLOP/s by M (for N, K >= 4096; smaller N or K run 20% slower).
  std::map<double, double> gemm_TFLOPs = {{128, 800}, {512, 1200}, {2048, 1400}, {8192, 1420}, {32768, 1410}};
  // Grouped GEMM efficiency by rows per expert (65536 rows split over 128, 32, 8 experts).
  std::map<double, double> grouped_efficiency = {{512, 0.90}, {2048, 0.85}, {8192, 0.80}};
  // Per-pass rates over the forward rate: dense (shapes with M, N, K >= 4096) and grouped by rows
  // per expert (the grouped_efficiency x values).
  double dense_dgrad_ratio = 0.95, dense_wgrad_ratio = 0.85;
  std::map<double, double> grouped_dgrad_ratio = {{512, 0.80}, {2048, 0.88}, {8192, 0.93}};
  std::map<double, double> grouped_wgrad_ratio = {{512, 0.70}, {2048, 0.82}, {8192, 0.90}};
  double hbm_GBps = 6500, launch_us = 3;
  // Memory kernels' share of the copy rate (memcpy_d2d runs at hbm_GBps): the streaming kernels
  // (accumulation, flat AdamW) and the class kernels (cast, row gather, row softmax, multi-tensor
  // AdamW), which the fit prefers for their classes.
  double accum_fraction = 0.93, adamw_fraction = 0.9;
  double cast_fraction = 0.95, permute_fraction = 0.75, softmax_fraction = 0.5, multi_tensor_fraction = 0.8;
  double slowdown_all_reduce = 0.20, slowdown_all_to_all = 0.24;
  // Communication side (interference_comm records, 64 MiB to 4 GiB, beside a GEMM and a grouped
  // GEMM): collective time beside compute / alone - 1, per "kind dtype".
  std::map<std::string, double> comm_slowdown = {
      {"all_gather bf16", 0.40}, {"reduce_scatter fp32", 0.40}, {"all_reduce fp32", 0.40}, {"all_to_all bf16", 0.40}};
  double noise = 0.01;  // log-normal sigma per iteration
  int iters = 10;
};

// One node: collective sweeps (group size 8), GEMM grid, grouped GEMMs, memory kernels,
// interference (both sides, the communication side last). The all_reduce records name no algorithm, as the harness
// writes them.
nlohmann::json synthetic_node_measurements(const SyntheticTruth& t, std::uint64_t seed);
// Two nodes: a ring all_reduce sweep over 16 ranks (environment node_count 2).
nlohmann::json synthetic_two_node_measurements(const SyntheticTruth& t, std::uint64_t seed);

}  // namespace moesim::test
