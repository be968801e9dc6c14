// What a command-line parse error means for the user: an unknown option names itself and the
// closest option of its command; a missing command lists the commands.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace moesim::cli {

// The commands (sub-commands) of `app`, in registration order.
std::vector<std::string> command_names(const CLI::App& app);
// `app`'s command named `word`, or nullptr (CLI11 2.1's get_subcommand throws instead).
const CLI::App* command_named(const CLI::App& app, std::string_view word);

// The message for `e`, raised parsing argv against `app`; "" when CLI11's own says it best.
std::string explain_parse_error(const CLI::App& app, int argc, const char* const* argv, const CLI::ParseError& e);

}  // namespace moesim::cli
