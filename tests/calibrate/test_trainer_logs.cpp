// Trainer-log importers on authored examples in each trainer's printed layout (the format strings
// of olmo_core/train/callbacks/console_logger.py + speed_monitor.py, torchtitan/components/
// metrics.py, megatron/training/training.py): the medians of the steady-state steps, and a clear
// error naming the line that starts like a step line but cannot be read.
#include <catch2/catch.hpp>

#include <filesystem>

#include "calibrate/fit/trainer_logs.hpp"
#include "models/common/errors.hpp"
#include "studies/measured_runs.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using namespace moesim::fit;

namespace {

// One Olmo-core console block: the progress marker, then the metrics the callbacks record.
std::string olmo_core_step(int step, const char* tps, const char* bps, const char* mfu, const char* reserved) {
  return "[step=" + std::to_string(step) + "/100,epoch=1,eta=1h]\n    throughput/device/TPS=" + tps +
         "\n    throughput/device/TPS (actual avg)=" + tps + "\n    throughput/device/BPS=" + bps +
         "\n    throughput/device/MFU=" + mfu + "\n    gpu_memory/GPU reserved mem (GiB)=" + reserved + "\n";
}

// Olmo-core: the first step is not timed (no throughput); step 4 runs slow (a checkpoint).
const std::string kOlmoCore =
    "2025-06-01T10:00:00.000 node0:0 olmo_core.train:INFO Training...\n[step=1/100,epoch=1]\n"
    "    train/CE loss=10.8221\n    throughput/total tokens=8,388,608\n" +
    olmo_core_step(2, "16,001", "0.2442", "40.12", "201.3") + olmo_core_step(3, "16,400", "0.2503", "41.40", "203.9") +
    olmo_core_step(4, "12,000", "0.1831", "30.30", "202.0") + olmo_core_step(5, "16,380", "0.2500", "41.35", "203.1");

// torchtitan with its ANSI colours, one validation line (not a training step).
const std::string kTorchtitan =
    "[rank0]:[titan] 2025-06-01 10:00:01,000 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.1000  "
    "\x1b[38;2;180;60;0mgrad_norm:  4.0000  \x1b[36mmemory: 60.10GiB(75.20%)  \x1b[34mtps: 1,020  "
    "\x1b[36mtflops: 50.10  \x1b[35mmfu: 5.07%\x1b[39m\n"
    "[rank0]:[titan] INFO - step: 10  loss:  9.0000  grad_norm:  1.1000  memory: 61.00GiB(76.30%)  tps: 7,100  "
    "tflops: 340.20  mfu: 34.40%\n"
    "[rank0]:[titan] INFO - step: 20  loss:  8.0000  grad_norm:  1.0000  memory: 61.20GiB(76.50%)  tps: 7,300  "
    "tflops: 349.80  mfu: 35.37%\n"
    "[rank0]:[titan] INFO - validate step: 20  loss:  8.1000  memory: 55.00GiB(70.00%)  tps: 9,000\n"
    "[rank0]:[titan] INFO - step: 30  loss:  7.5000  memory: 61.10GiB(76.40%)  tps: 7,200  tflops: 345.00  "
    "mfu: 34.88%\n";

// Megatron-LM: report_memory per rank (two ranks' reports on one line, as unflushed output interleaves).
const std::string kMegatron =
    "[Rank 0] (after 1 iterations) memory (MB) | allocated: 10770.4 | max allocated: 15754.9 | reserved: 16334.0 | "
    "max reserved: 16334.0\n"
    "[Rank 2] (after 1 iterations) memory (MB) | allocated: 9334.4 | max allocated: 12680.6 | reserved: 13236.0 | "
    "max reserved: 13236.0[Rank 6] (after 1 iterations) memory (MB) | allocated: 10850.7 | max allocated: 16850.7 | "
    "reserved: 17000.0 | max reserved: 17000.0\n"
    " [2025-08-01 07:19:37] iteration        1/    5000 | consumed samples:          128 | "
    "elapsed time per iteration (ms): 19138.8 | throughput per GPU (TFLOP/s/GPU): 80.2 | learning rate: 6.97E-08 |\n"
    " [2025-08-01 07:19:50] iteration        2/    5000 | consumed samples:          256 | "
    "elapsed time per iteration (ms): 12936.1 | throughput per GPU (TFLOP/s/GPU): 118.7 |\n"
    " [2025-08-01 07:20:03] iteration        3/    5000 | consumed samples:          384 | "
    "elapsed time per iteration (ms): 12901.0 | throughput per GPU (TFLOP/s/GPU): 119.0 |\n"
    " [2025-08-01 07:20:16] iteration        4/    5000 | consumed samples:          512 | "
    "elapsed time per iteration (ms): 12920.0 | throughput per GPU (TFLOP/s/GPU): 118.8 |\n";

std::string error_of(const std::string& text, const std::string& format, int skip = 0) {
  try {
    parse_trainer_log(text, "train.log", format, skip);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("Olmo-core console logs give TPS, step time, MFU and reserved memory", "[unit][trainer_log]") {
  // Step 1 has no throughput and is not a step; skipping 1 leaves steps 3, 4, 5.
  const TrainerLogSummary s = parse_trainer_log(kOlmoCore, "train.log", "olmo-core", 1);
  CHECK(s.steps_logged == 4);
  CHECK(s.steps_used == 3);
  CHECK(s.first_step == 3);
  CHECK(s.last_step == 5);
  CHECK(*s.tokens_per_s_per_gpu == 16380);       // median of 16400, 12000, 16380
  CHECK(*s.step_time_ms == Approx(1e3 / 0.25));  // median BPS 0.2500
  CHECK(*s.mfu == Approx(0.4135));
  CHECK(s.flop_convention == "olmo-core");
  CHECK(*s.peak_reserved_GiB == 203.9);  // the largest peak, not the median
  CHECK_FALSE(s.peak_allocated_GiB);
  CHECK(s.source.find("steps 3-5: median of 3 logged steps after skipping 1") != std::string::npos);
}

TEST_CASE("torchtitan logs give tps, MFU (PaLM count) and reserved memory", "[unit][trainer_log]") {
  const TrainerLogSummary s = parse_trainer_log(kTorchtitan, "train.log", "torchtitan", 1);
  CHECK(s.steps_logged == 4);  // the validation line is not a step
  CHECK(s.first_step == 10);
  CHECK(*s.tokens_per_s_per_gpu == 7200);
  CHECK(*s.mfu == Approx(0.3488));
  CHECK(s.flop_convention == "palm");
  CHECK(*s.peak_reserved_GiB == 61.2);
  CHECK_FALSE(s.step_time_ms);
}

TEST_CASE("Megatron-LM logs give the step time and the largest per-rank peaks", "[unit][trainer_log]") {
  const TrainerLogSummary s = parse_trainer_log(kMegatron, "train.log", "megatron", 1);
  CHECK(s.steps_used == 3);
  CHECK(*s.step_time_ms == 12920.0);
  CHECK(*s.peak_allocated_GiB == Approx(16850.7 / 1024));  // rank 6, on a line shared with rank 2
  CHECK(*s.peak_reserved_GiB == Approx(17000.0 / 1024));
  CHECK_FALSE(s.mfu);  // TFLOP/s per GPU is not an MFU: the convention and peak are unknown
}

TEST_CASE("Trainer-log lines that cannot be read are errors naming the file and line", "[unit][trainer_log]") {
  CHECK(error_of(kOlmoCore + "[step=6/100,epoch=1]\n    throughput/device/TPS=fast\n", "olmo-core") ==
        "train.log: line 30: cannot read throughput/device/TPS (\"fast\" is not a number): "
        "\"    throughput/device/TPS=fast\"");
  CHECK(error_of("[step=x/100]\n", "olmo-core").find("line 1: cannot read an Olmo-core progress marker") !=
        std::string::npos);
  CHECK(error_of("step: 3  loss: 1.0  memory: 1.0GiB  tps: 100\n", "torchtitan")
            .find("train.log: line 1: cannot read a torchtitan step line") == 0);
  CHECK(error_of(" iteration 3/ 10 | elapsed time per iteration (ms): n/a |\n", "megatron")
            .find("train.log: line 1: cannot read a Megatron-LM iteration line") == 0);
  CHECK(error_of("[Rank 0] (after 1 iterations) memory (MB) | allocated: 1\n", "megatron").find("line 1") !=
        std::string::npos);
  CHECK(error_of("nothing here\n", "megatron") == "train.log: no megatron step lines with throughput in the log");
  CHECK(error_of(kMegatron, "megatron", 4).find("4 logged step(s), all skipped as warm-up") != std::string::npos);
  CHECK(error_of(kMegatron, "nemo").find("unknown trainer log format") != std::string::npos);
}

TEST_CASE("moesim import trainer-log writes a runs file that moesim fit runs reads", "[unit][trainer_log]") {
  test::TempDir dir;
  const std::string log = dir.write("fsdp-128Ki.log", kMegatron);
  const std::string out = dir.path("runs.json");
  const std::string scenario = " --scenario " + test::source_path("scenarios/fig8/fig8a.json");
  REQUIRE(test::run_cli("import trainer-log " + log + " --format megatron" + scenario +
                        " --set design=fsdp --set plan.batch.global_batch_tokens=128Ki --skip 1 -o " + out) == 0);
  const RunsFile runs = read_runs(out, {});
  REQUIRE(runs.runs.size() == 1);
  CHECK(runs.runs[0].id == "fsdp-128Ki");
  CHECK(runs.runs[0].design == "fsdp");
  CHECK(runs.runs[0].metrics[0].name == "step_time_s");
  CHECK(runs.runs[0].metrics[0].measured == Approx(12.92));
  CHECK(runs.runs[0].source.find("steps 2-4: median of 3") != std::string::npos);
  // A bad log, or a scenario override the scenario refuses: exit 2 and no file.
  const std::string out2 = dir.path("runs2.json");
  const std::string bad = dir.write("bad.log", " iteration 3/ 10 | elapsed time per iteration (ms): n/a |\n");
  CHECK(test::run_cli("import trainer-log " + bad + " --format megatron" + scenario + " -o " + out2) == 2);
  CHECK(test::run_cli("import trainer-log " + log + " --format megatron" + scenario + " --set plan.nope=1 -o " +
                      out2) == 2);
  CHECK(test::run_cli("import trainer-log " + log + " --format nemo" + scenario + " -o " + out2) == 2);
  CHECK_FALSE(std::filesystem::exists(out2));
}
