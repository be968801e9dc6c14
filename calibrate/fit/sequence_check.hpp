// The harness's `sequence` records (one microbatch through one block, forward then backward, in
// launch order on one stream) against the cost model on the fitted profile: each kernel priced as
// the simulator prices it, summed per phase, beside the measured kernels alone and the measured
// whole sequence. Not a fit: a check of what the fitted tables give back on the kernels of a step.
#pragma once

#include <string>
#include <vector>

#include "calibrate/fit/measurements.hpp"
#include "models/hw/hardware_profile.hpp"

namespace moesim::fit {

// A share of the sequence's kernels: one phase, or one op (with its method for grouped GEMMs).
struct SequencePart {
  std::string part;  // "forward", "backward", "grad_accumulate"; "gemm", "grouped_gemm cublasLt_per_expert", ...
  int kernels = 0;
  double measured_us = 0;  // sum of the kernels alone (their medians)
  double model_us = 0;     // the cost model on the fitted profile, the same kernels
};

struct SequenceCheck {
  std::string file, label, block;  // label: "moe_block", "dense_block"
  std::vector<SequencePart> phases, ops;
  double whole_us = 0;        // the whole sequence, launched back to back (median)
  double kernels_sum_us = 0;  // the kernels alone, summed
  double model_us = 0;        // the cost model, summed
  int untimed = 0;            // kernels the budget left untimed (left out of every sum)
};

// One entry per sequence record with at least one timed kernel. Memory kernels are priced by
// their own class (memory_class_of, compute_fit.hpp).
std::vector<SequenceCheck> check_sequences(const std::vector<MeasurementFile>& files, const HardwareProfile& fitted);

// The table `moesim fit` prints after the fitted fields ("" when there is no sequence record).
std::string format_sequence_checks(const std::vector<SequenceCheck>& checks);

}  // namespace moesim::fit
