// Fuzz entry points: one per parser that takes user input. Each takes raw bytes, runs them
// through the same code the CLI runs, and returns normally when the input is accepted or refused
// with an InputError (file, JSON path, what is allowed). Anything else (another exception, a
// crash, a sanitizer report) is a bug. libFuzzer drives them (fuzz_main.cpp); the Catch2 suite
// replays the seed corpus and every committed crash through them (tests/fuzz/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moesim {
struct StepResult;
}

namespace moesim::fuzz {

// "" when every number a user reads is finite and in its physical range (step time and
// tokens/s positive, MFU in (0, 1], exposed times, bytes and ledger finite and non-negative,
// dropped fraction in [0, 1]); else the first problem. The oracle of the simulating targets.
std::string step_output_problem(const StepResult& r);

void scenario_input(std::string_view data);      // a scenario file, sections inline or by path
void profile_input(std::string_view data);       // a hardware profile file
void overrides_input(std::string_view data);     // lines of --set and --vary expressions
void measurements_input(std::string_view data);  // a measurement file, then `moesim fit`
void nccl_tests_input(std::string_view data);    // an nccl-tests log, then its measurement file
void plan_space_input(std::string_view data);    // bytes -> a valid-but-extreme plan, simulated

struct Target {
  const char* name;  // fuzz/corpus/NAME holds its seeds
  void (*run)(std::string_view);
};
const std::vector<Target>& targets();

}  // namespace moesim::fuzz
