// Progress tables on stdout in the style of nccl-tests: one line per measured point as it is
// taken, so that a run's log shows how far it got.
#pragma once

#include <cstdint>
#include <string>

#include "timing.hpp"

namespace moesim::cal {

void print_banner(const std::string& text);
void print_note(const std::string& text);

// Collectives: size, count, type, redop, label, median, p10, p90, algbw, busbw, check.
void print_collective_header(const std::string& title, int group_size);
void print_collective_row(std::int64_t bytes, std::int64_t count, const std::string& type, const std::string& redop,
                          const std::string& label, const TimedRun& r, double algbw, double busbw,
                          const std::string& check);

// GEMMs: name, m, n, k, layout, median, p10, p90, TFLOP/s, check.
void print_gemm_header(const std::string& title);
void print_gemm_row(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& layout,
                    const TimedRun& r, double tflops, const std::string& check);

// Memory-bound kernels and other single-rate rows: name, size, median, p10, p90, rate, check.
void print_rate_header(const std::string& title, const std::string& rate_unit);
void print_rate_row(const std::string& name, std::int64_t size, const TimedRun& r, double rate,
                    const std::string& check);

void print_skip(const std::string& what, const std::string& reason);

}  // namespace moesim::cal
