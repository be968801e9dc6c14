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

Runner add_help_command(CLI::App& app) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* help = app.add_subcommand("help", "the help of moesim, or of COMMAND (the same as moesim COMMAND --help)");
  help->add_option("command", *words, "a command and its sub-commands, e.g. `list stacks`");
  return [&app, help, words]() -> int {
    if (!help->parsed()) return -1;
    const CLI::App* at = &app;
    std::string path;  // the command's words after "moesim"
    for (const auto& word : *words) {
      const CLI::App* next = command_named(*at, word);
      if (next == nullptr) {
        const auto names = command_names(*at);
        throw InputError("help", "",
                         "\"moesim" + path + "\" has no command \"" + word + "\"" +
                             did_you_mean(word, names, "commands: " + comma_joined(names)));
      }
      at = next;
      path += " " + word;
    }
    // App::help() would follow the parsed `help` command; the formatter prints `at` itself, named
    // as `moesim COMMAND --help` names it.
    std::cout << at->get_formatter()->make_help(at, app.get_name() + path, CLI::AppFormatMode::Normal);
    return kExitOk;
  };
}

}  // namespace moesim::cli
