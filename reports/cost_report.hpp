// `moesim cost` results as text and JSON: one kernel or collective as priced, and the list of
// registered models with their descriptions. Observers only: the numbers come from models/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/cost_types.hpp"
#include "models/common/registry.hpp"

namespace moesim {

// Four significant digits, but whole numbers of 10^4 and more without an exponent.
std::string significant(double value);
std::string time_text(double seconds);  // us, ms or s
std::string bytes_text(double bytes);   // B, KiB, MiB or GiB

nlohmann::json kernel_json(const KernelTime& t);
// "label: 1.23 ms, 1411 TFLOP/s achieved (sustained rate 1416), HBM-bound (...)".
std::string kernel_line(const std::string& label, const KernelTime& t);

// A collective as the model priced it: the fastest algorithm and every available one.
struct CollectiveQuote {
  std::string profile;
  std::string model;
  CollectiveRequest request;
  CollectiveCost best;
  std::vector<CollectiveCost> algorithms;  // in the model's order
};
std::string collective_text(const CollectiveQuote& quote);
nlohmann::json collective_json(const CollectiveQuote& quote);

// One EP dispatch or combine priced by every registered transport.
struct EpTransferQuote {
  struct Row {
    std::string transport;
    std::string unavailable;  // why the profile cannot price it ("" when priced)
    EpTransferCost cost;      // per rank
    bool fuses_permutation = false;
  };
  std::string profile;
  EpTransferRequest request;
  std::vector<Row> rows;
};
std::string ep_transfer_text(const EpTransferQuote& quote);
nlohmann::json ep_transfer_json(const EpTransferQuote& quote);

// One registry: what it chooses, the scenario key that chooses it, its entries.
struct ModelFamily {
  std::string kind;
  std::string choose_with;  // e.g. "cost_models.gemm", or how else it is chosen
  std::vector<RegistryEntry> entries;
};
std::string model_listing(const std::vector<ModelFamily>& families);
nlohmann::json model_listing_json(const std::vector<ModelFamily>& families);

}  // namespace moesim
