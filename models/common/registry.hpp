// Name -> implementation registry shared by every kind of model (FLOP conventions, cost models,
// optimizer layouts, parameter-sync strategies, resource sharing). Every implementation
// registers under a name and a one-line description (`moesim cost --list` prints them); an
// unknown name is an error that lists the valid ones.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/common/suggest.hpp"

namespace moesim {

class UnknownNameError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What every registered implementation carries: its name and a one-line description (both
// string literals).
class Registered {
 public:
  constexpr Registered(std::string_view name, std::string_view description) : name_(name), description_(description) {}
  virtual ~Registered() = default;
  std::string_view name() const { return name_; }
  std::string_view description() const { return description_; }

 private:
  std::string_view name_;
  std::string_view description_;
};

struct RegistryEntry {
  std::string name;
  std::string description;
};

template <class Interface>
class Registry {
 public:
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  const std::string& kind() const { return kind_; }

  // A second implementation under a name already taken is a programming error, never a silent
  // replacement of the first.
  void add(std::unique_ptr<Interface> impl) {
    const std::string key(impl->name());
    if (!items_.emplace(key, std::move(impl)).second) {
      throw std::logic_error("duplicate " + kind_ + " \"" + key + "\": a registry takes each name once");
    }
    order_.push_back(key);
  }

  // The names in the order they were registered (names() sorts them).
  const std::vector<std::string>& registration_order() const { return order_; }

  const Interface& get(std::string_view name) const {
    auto it = items_.find(name);
    if (it == items_.end()) {
      throw UnknownNameError("unknown " + kind_ + " \"" + std::string(name) + "\"" +
                             did_you_mean(name, names(), "valid: " + list()));
    }
    return *it->second;
  }

  // The implementation under `name`, or null (for a caller that leaves an unknown name to
  // another check).
  const Interface* find(std::string_view name) const {
    auto it = items_.find(name);
    return it == items_.end() ? nullptr : it->second.get();
  }

  // Calls `visit` with every implementation in name order (as names() lists them, without copies).
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [k, v] : items_) visit(*v);
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }

  // Every entry with its description, in name order.
  std::vector<RegistryEntry> entries() const {
    std::vector<RegistryEntry> out;
    for (const auto& [k, v] : items_) out.push_back({k, std::string(v->description())});
    return out;
  }

  std::string list() const { return comma_joined(names()); }

 private:
  std::string kind_;
  std::map<std::string, std::unique_ptr<Interface>, std::less<>> items_;
  std::vector<std::string> order_;
};

// A registry holding one default-constructed instance of each implementation.
template <class Interface, class... Implementations>
Registry<Interface> make_registry(std::string kind) {
  Registry<Interface> r(std::move(kind));
  (r.add(std::make_unique<Implementations>()), ...);
  return r;
}

}  // namespace moesim
