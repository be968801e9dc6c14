// Importers for the throughput lines common trainers log (`moesim import trainer-log`): one log
// becomes the "measured" block of a moesim-runs/1 run (studies/measured_runs.hpp), the median of
// its steady-state steps. Each format is read as the trainer's own code prints it:
// - olmo-core: ConsoleLoggerCallback blocks "[step=N/M,epoch=E...]" then "    NAME=VALUE" lines
//   (olmo_core/train/callbacks/console_logger.py), from SpeedMonitorCallback
//   (throughput/device/TPS, .../BPS, .../MFU) and GPUMemoryMonitorCallback (gpu_memory/GPU
//   reserved mem (GiB));
// - torchtitan: MetricsProcessor.log "step: N  loss: L  grad_norm: G  memory: R GiB(P%)  tps: T
//   tflops: F  mfu: M%" (torchtitan/components/metrics.py; older versions print no grad_norm);
// - megatron: training_log " iteration N/ M | ... | elapsed time per iteration (ms): X | ..." and
//   report_memory "[Rank R] (after N iterations) memory (MB) | allocated: .. | max allocated: ..
//   | reserved: .. | max reserved: .." (megatron/training/training.py; its MB are MiB).
// A line that starts like one of these but cannot be read is an error naming the file and line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace moesim::fit {

struct TrainerLogSummary {
  std::string format;  // olmo-core, torchtitan, megatron
  std::string file;
  int steps_logged = 0;                // step lines read
  int steps_used = 0;                  // after the skipped warm-up steps
  long first_step = 0, last_step = 0;  // of those used
  std::optional<double> step_time_ms, tokens_per_s_per_gpu, mfu, peak_allocated_GiB, peak_reserved_GiB;
  std::string flop_convention;  // of mfu: olmo-core's or torchtitan's (moesim's "palm") count
  std::string source;           // "FILE (format, steps A-B: median of N after skipping K)"
};

// The trainer formats read, for option checks and errors.
const std::vector<std::string>& trainer_log_formats();

// Throws InputError naming the file (and "line N" for a line it cannot read), an unknown format,
// a log without step lines, or fewer steps than `skip_steps` + 1.
TrainerLogSummary read_trainer_log(const std::string& file, const std::string& format, int skip_steps);

// The same on log text already read (tests); `file` names it.
TrainerLogSummary parse_trainer_log(const std::string& text, const std::string& file, const std::string& format,
                                    int skip_steps);

}  // namespace moesim::fit
