#include "models/common/enum_names.hpp"

#include "models/common/registry.hpp"
#include "models/common/suggest.hpp"

namespace moesim {

void throw_unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& valid) {
  throw UnknownNameError("unknown " + std::string(what) + " \"" + std::string(name) + "\"" +
                         did_you_mean(name, valid, "valid: " + comma_joined(valid)));
}

}  // namespace moesim
