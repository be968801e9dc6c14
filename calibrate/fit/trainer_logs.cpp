#include "calibrate/fit/trainer_logs.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "calibrate/fit/measurements.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/suggest.hpp"

namespace moesim::fit {

namespace {

// One logged step (or, for Megatron's memory report, one line of peaks).
struct StepRecord {
  long step = 0;
  std::optional<double> step_ms, tps, mfu_percent, reserved_GiB, allocated_GiB;
};

struct LogReader {
  std::string file;
  int line_number = 0;
  std::string line;
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(file, "line " + std::to_string(line_number), "cannot read " + what + ": \"" + line + "\"");
  }
  // A logged number: thousands separators allowed ("12,345"), nothing else after it.
  double number(const std::string& text, const std::string& what) const {
    std::string digits;
    for (char c : text) {
      if (c != ',') digits += c;
    }
    try {
      std::size_t used = 0;
      const double v = std::stod(digits, &used);
      if (used == digits.size() && v >= 0) return v;
    } catch (const std::exception&) {}
    fail(what + " (\"" + text + "\" is not a number)");
  }
};

const std::regex kAnsiColour("\x1b\\[[0-9;]*m");

// Olmo-core: "[step=N/M,epoch=E]" (",eta=..." once metrics follow), then "    NAME=VALUE" lines.
void olmo_core_line(LogReader& in, std::vector<StepRecord>& steps) {
  static const std::regex marker(R"(\[step=(\d+)/[^,\]]*,epoch=)");
  static const std::regex metric(R"(^\s+([a-z_]+/[^=]+)=(\S+)\s*$)");
  std::smatch m;
  if (in.line.find("[step=") != std::string::npos) {
    if (!std::regex_search(in.line, m, marker)) in.fail("an Olmo-core progress marker [step=N/M,epoch=E]");
    steps.push_back({std::stol(m[1].str()), {}, {}, {}, {}, {}});
    return;
  }
  if (steps.empty() || !std::regex_match(in.line, m, metric)) return;
  const std::string name = m[1].str();
  StepRecord& s = steps.back();
  if (name == "throughput/device/TPS") s.tps = in.number(m[2].str(), name);
  if (name == "throughput/device/BPS") s.step_ms = 1e3 / std::max(in.number(m[2].str(), name), 1e-12);
  if (name == "throughput/device/MFU") s.mfu_percent = in.number(m[2].str(), name);
  if (name == "gpu_memory/GPU reserved mem (GiB)") s.reserved_GiB = in.number(m[2].str(), name);
}

// torchtitan: "step: N  loss: L  [grad_norm: G  ]memory: R GiB(P%)  tps: T  tflops: F  mfu: M%".
void torchtitan_line(LogReader& in, std::vector<StepRecord>& steps) {
  static const std::regex step(
      R"(step:\s*(\d+)\s+loss:\s*\S+\s+(?:grad_norm:\s*\S+\s+)?memory:\s*([0-9.]+)GiB\([0-9.]+%\)\s+)"
      R"(tps:\s*([0-9,]+)\s+tflops:\s*[0-9,.]+\s+mfu:\s*([0-9.]+)%)");
  if (in.line.find("tps:") == std::string::npos || in.line.find("validate step:") != std::string::npos) return;
  std::smatch m;
  if (!std::regex_search(in.line, m, step)) in.fail("a torchtitan step line (step: loss: memory: tps: tflops: mfu:)");
  steps.push_back({std::stol(m[1].str()),
                   {},
                   in.number(m[3].str(), "tps"),
                   in.number(m[4].str(), "mfu"),
                   in.number(m[2].str(), "memory"),
                   {}});
}

// Megatron-LM: training_log's iteration line and report_memory's per-rank peaks (MB = MiB).
void megatron_line(LogReader& in, std::vector<StepRecord>& steps, StepRecord& memory) {
  static const std::regex iteration(R"(iteration\s+(\d+)\s*/\s*\d+\s*\|)");
  static const std::regex elapsed(R"(elapsed time per iteration \(ms\):\s*([0-9.,]+)\s*\|)");
  static const std::regex peaks(
      R"(max allocated:\s*([0-9.]+)\s*\|\s*reserved:\s*[0-9.]+\s*\|\s*max reserved:\s*([0-9.]+))");
  std::smatch m, t;
  if (in.line.find("elapsed time per iteration") != std::string::npos) {
    if (!std::regex_search(in.line, m, iteration) || !std::regex_search(in.line, t, elapsed))
      in.fail("a Megatron-LM iteration line (iteration N/M | ... | elapsed time per iteration (ms): X |)");
    steps.push_back({std::stol(m[1].str()), in.number(t[1].str(), "elapsed time"), {}, {}, {}, {}});
  }
  if (in.line.find("memory (MB)") == std::string::npos) return;
  bool any = false;
  for (std::sregex_iterator it(in.line.begin(), in.line.end(), peaks), end; it != end; ++it) {
    any = true;
    memory.allocated_GiB =
        std::max(memory.allocated_GiB.value_or(0), in.number((*it)[1].str(), "max allocated") / 1024);
    memory.reserved_GiB = std::max(memory.reserved_GiB.value_or(0), in.number((*it)[2].str(), "max reserved") / 1024);
  }
  if (!any) in.fail("a Megatron-LM memory report (max allocated: | reserved: | max reserved:)");
}

std::optional<double> median_of(const std::vector<StepRecord>& steps, std::optional<double> StepRecord::*field) {
  std::vector<double> v;
  for (const auto& s : steps) {
    if (s.*field) v.push_back(*(s.*field));
  }
  if (v.empty()) return std::nullopt;
  return fit::median_of(std::move(v));  // the measurement reader's median (middle pair averaged)
}

std::optional<double> largest_of(const std::vector<StepRecord>& steps, std::optional<double> StepRecord::*field) {
  std::optional<double> out;
  for (const auto& s : steps) {
    if (s.*field) out = std::max(out.value_or(0), *(s.*field));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& trainer_log_formats() {
  static const std::vector<std::string> formats = {"megatron", "olmo-core", "torchtitan"};
  return formats;
}

TrainerLogSummary parse_trainer_log(const std::string& text, const std::string& file, const std::string& format,
                                    int skip_steps) {
  const auto& formats = trainer_log_formats();
  if (std::find(formats.begin(), formats.end(), format) == formats.end())
    throw InputError("--format", format,
                     "unknown trainer log format" + did_you_mean(format, formats, comma_joined(formats)));
  LogReader in{file, 0, ""};
  std::vector<StepRecord> steps;
  StepRecord memory;
  std::istringstream lines(text);
  for (std::string raw; std::getline(lines, raw);) {
    ++in.line_number;
    in.line = std::regex_replace(raw, kAnsiColour, "");
    if (!in.line.empty() && in.line.back() == '\r') in.line.pop_back();
    if (format == "olmo-core") olmo_core_line(in, steps);
    if (format == "torchtitan") torchtitan_line(in, steps);
    if (format == "megatron") megatron_line(in, steps, memory);
  }
  // Olmo-core's progress markers without throughput (its first step, which it does not time) are not steps.
  steps.erase(std::remove_if(steps.begin(), steps.end(), [](const StepRecord& s) { return !s.tps && !s.step_ms; }),
              steps.end());
  if (steps.empty()) throw InputError(file, "", "no " + format + " step lines with throughput in the log");
  if (static_cast<int>(steps.size()) <= skip_steps) {
    throw InputError(file, "",
                     std::to_string(steps.size()) + " logged step(s), all skipped as warm-up (--skip " +
                         std::to_string(skip_steps) + "): log more steps or skip fewer");
  }
  TrainerLogSummary out;
  out.format = format;
  out.file = file;
  out.steps_logged = static_cast<int>(steps.size());
  const std::vector<StepRecord> used(steps.begin() + skip_steps, steps.end());
  out.steps_used = static_cast<int>(used.size());
  out.first_step = used.front().step;
  out.last_step = used.back().step;
  out.step_time_ms = median_of(used, &StepRecord::step_ms);
  out.tokens_per_s_per_gpu = median_of(used, &StepRecord::tps);
  if (const auto mfu = median_of(used, &StepRecord::mfu_percent)) out.mfu = *mfu / 100;
  if (out.mfu) out.flop_convention = format == "olmo-core" ? "olmo-core" : "palm";
  out.peak_reserved_GiB = format == "megatron" ? memory.reserved_GiB : largest_of(used, &StepRecord::reserved_GiB);
  out.peak_allocated_GiB = memory.allocated_GiB;
  out.source = file + " (" + format + " log, steps " + std::to_string(out.first_step) + "-" +
               std::to_string(out.last_step) + ": median of " + std::to_string(out.steps_used) +
               " logged steps after skipping " + std::to_string(skip_steps) + "; memory: the largest peak logged)";
  return out;
}

TrainerLogSummary read_trainer_log(const std::string& file, const std::string& format, int skip_steps) {
  return parse_trainer_log(read_text_file(file), file, format, skip_steps);
}

}  // namespace moesim::fit
