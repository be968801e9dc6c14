// `moesim help [COMMAND...]`: the help of moesim or of one command (`moesim help list stacks`),
// the same text as `moesim COMMAND --help`; an unknown command is refused with the closest name.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/parse_errors.hpp"
#include "models/common/errors.hpp"
#include "models/common/suggest.hpp"

namespace moesim::cli {

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

Runner add_help_command(CLI::App& app) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* help = app.add_subcommand("help", "the help of moesim, or of COMMAND (the same as moesim COMMAND --help)");
  help->add_option("command", *words, "a command and its sub-commands, e.g. `list stacks`");
  return [&app, help, words]() -> int {
    if (!help->parsed()) return -1;
    const CLI::App* at = &app;
    std::string path = "moesim";
    for (const auto& word : *words) {
      const auto names = command_names(*at);
      const CLI::App* next = nullptr;
      for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->get_name() == word) next = sub;
      }
      if (next == nullptr) {
        throw InputError("help", "",
                         "\"" + path + "\" has no command \"" + word + "\"" +
                             did_you_mean(word, names, "commands: " + comma_joined(names)));
      }
      at = next;
      path += " " + word;
    }
    // App::help() would follow the parsed `help` command; the formatter prints `at` itself, named
    // as `moesim COMMAND --help` names it.
    std::string usage = app.get_name();
    for (const auto& word : *words) usage += " " + word;
    std::cout << at->get_formatter()->make_help(at, usage, CLI::AppFormatMode::Normal);
    return kExitOk;
  };
}

}  // namespace moesim::cli
