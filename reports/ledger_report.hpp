// Renders a scenario's model summary and memory ledger as a readable table and as JSON.
// Observers only: every number comes computed from models/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/arch/flops.hpp"
#include "models/arch/inventory.hpp"
#include "models/input/composed_scenario.hpp"
#include "models/memory/ledger.hpp"

namespace moesim {

struct LedgerInputs {
  const Scenario& scenario;
  const Inventory& inventory;
  const FlopsPerToken& flops;
  const MemoryLedger& ledger;
};

nlohmann::json ledger_json(const LedgerInputs& in);
std::string ledger_table(const LedgerInputs& in);
std::string inventory_table(const Inventory& inv);
nlohmann::json inventory_json(const Inventory& inv);

}  // namespace moesim
