#include "reports/document_reader.hpp"

#include <stdexcept>
#include <utility>

namespace moesim {

DocumentNode::DocumentNode(const nlohmann::json& value, std::string schema_file, std::string path)
    : value_(&value), schema_file_(std::move(schema_file)), path_(std::move(path)) {}

void DocumentNode::fail(const std::string& what) const {
  throw std::invalid_argument((path_.empty() ? std::string("/") : path_) + ": " + what + " (see " + schema_file_ + ")");
}

DocumentNode DocumentNode::at(std::string_view key) const {
  if (!value_->is_object()) fail(std::string("expected an object, found ") + value_->type_name());
  const auto it = value_->find(key);
  if (it == value_->end()) fail("missing key '" + std::string(key) + "'");
  return DocumentNode(*it, schema_file_, path_ + "/" + std::string(key));
}

bool DocumentNode::has(std::string_view key) const { return value_->is_object() && value_->contains(key); }

std::vector<DocumentNode> DocumentNode::elements() const {
  if (!value_->is_array()) fail(std::string("expected an array, found ") + value_->type_name());
  std::vector<DocumentNode> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    out.emplace_back((*value_)[i], schema_file_, path_ + "/" + std::to_string(i));
  return out;
}

double DocumentNode::number() const {
  if (!value_->is_number()) fail(std::string("expected a number, found ") + value_->type_name());
  return value_->get<double>();
}

long long DocumentNode::integer() const {
  if (!value_->is_number_integer()) fail(std::string("expected an integer, found ") + value_->dump());
  return value_->get<long long>();
}

bool DocumentNode::boolean() const {
  if (!value_->is_boolean()) fail(std::string("expected true or false, found ") + value_->type_name());
  return value_->get<bool>();
}

const std::string& DocumentNode::string() const {
  if (!value_->is_string()) fail(std::string("expected a string, found ") + value_->type_name());
  return value_->get_ref<const std::string&>();
}

}  // namespace moesim
