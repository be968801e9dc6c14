#include "cli/parse_errors.hpp"

#include <cstdlib>
#include <string_view>

#include "models/common/suggest.hpp"

namespace moesim::cli {

namespace {

// "--json" / "-j" for every option of `app` (its flags, --help included).
std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) out.push_back("--" + l);
    for (const auto& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

bool is_number(std::string_view word) {
  const std::string text(word);
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

// The deepest command named on the line (`moesim list stacks`: list stacks) and its path.
const CLI::App* named_command(const CLI::App& app, int argc, const char* const* argv, std::string& path) {
  const CLI::App* at = &app;
  path = "moesim";
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word.starts_with("-")) continue;
    if (const CLI::App* sub = command_named(*at, word)) {
      at = sub;
      path += " " + std::string(word);
    }
  }
  return at;
}

}  // namespace

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

const CLI::App* command_named(const CLI::App& app, std::string_view word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name() == word) return sub;
  }
  return nullptr;
}

std::string explain_parse_error(const CLI::App& app, int argc, const char* const* argv, const CLI::ParseError& e) {
  std::string path;
  const CLI::App* command = named_command(app, argc, argv, path);
  const std::vector<std::string> known = option_spellings(*command);
  // An option the command does not have: name it, and the closest one it has.
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (!word.starts_with("-") || word == "-" || word == "--" || is_number(word)) continue;
    if (const auto eq = word.find('='); eq != std::string_view::npos) word = word.substr(0, eq);  // --json=x
    bool found = false;
    for (const auto& k : known) found = found || k == word;
    if (found) continue;
    if (command == &app) {
      const auto commands = command_names(app);
      return "unknown option " + std::string(word) + ": moesim takes a command first (" + comma_joined(commands) +
             "; moesim help COMMAND)";
    }
    return "unknown option " + std::string(word) + " for `" + path + "`" +
           did_you_mean(word, known, "`" + path + " --help` lists its options");
  }
  if (e.get_name() == "RequiredError") {  // a missing command, option or positional argument
    if (command == &app) return "a command is required: " + comma_joined(command_names(app)) + " (moesim help COMMAND)";
    return "`" + path + "`: " + e.what() + " (`" + path + " --help` lists its options)";
  }
  // An option given without the one it needs (--trace-ranks without --trace), or with one it
  // excludes (compare --stack with --design): said as every other input error is.
  if (e.get_name() == "RequiresError" || e.get_name() == "ExcludesError")
    return "`" + path + "`: " + e.what() + " (`" + path + " --help` lists its options)";
  return "";
}

}  // namespace moesim::cli
