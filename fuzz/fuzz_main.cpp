// libFuzzer driver for one entry of fuzz/entries.hpp, chosen at build time (MOESIM_FUZZ_ENTRY).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  moesim::fuzz::MOESIM_FUZZ_ENTRY(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
