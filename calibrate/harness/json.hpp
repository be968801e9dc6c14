// Minimal JSON value, parser and writer for the calibration harness.
// Hand-written so that the harness builds with nothing but the CUDA toolkit and NCCL (the GPU
// machines may lack nlohmann_json). Objects keep insertion order so that output is stable.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moesim::cal::json {

class Value;
using Items = std::vector<Value>;
using Member = std::pair<std::string, Value>;

class Value {
  public:
    enum class Type { Null, Bool, Int, Double, String, Array, Object };

    Value() = default;
    Value(std::nullptr_t) {}
    Value(bool b) : type_(Type::Bool), bool_(b) {}
    Value(int v) : type_(Type::Int), int_(v) {}
    Value(long v) : type_(Type::Int), int_(v) {}
    Value(long long v) : type_(Type::Int), int_(v) {}
    Value(unsigned v) : type_(Type::Int), int_(v) {}
    Value(unsigned long v) : type_(Type::Int), int_(static_cast<std::int64_t>(v)) {}
    Value(unsigned long long v) : type_(Type::Int), int_(static_cast<std::int64_t>(v)) {}
    Value(double v) : type_(Type::Double), double_(v) {}
    Value(const char* s) : type_(Type::String), string_(s) {}
    Value(std::string s) : type_(Type::String), string_(std::move(s)) {}
    Value(Items a) : type_(Type::Array), array_(std::move(a)) {}

    static Value object() {
        Value v;
        v.type_ = Type::Object;
        return v;
    }
    static Value array() {
        Value v;
        v.type_ = Type::Array;
        return v;
    }
    template <typename T>
    static Value array_of(const std::vector<T>& items) {
        Value v = array();
        for (const auto& x : items) v.push_back(Value(x));
        return v;
    }

    Type type() const { return type_; }
    bool is_null() const { return type_ == Type::Null; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_number() const { return type_ == Type::Int || type_ == Type::Double; }
    bool is_int() const { return type_ == Type::Int; }
    bool is_string() const { return type_ == Type::String; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }

    bool as_bool() const { return bool_; }
    std::int64_t as_int() const { return type_ == Type::Int ? int_ : static_cast<std::int64_t>(double_); }
    double as_double() const { return type_ == Type::Int ? static_cast<double>(int_) : double_; }
    const std::string& as_string() const { return string_; }
    const Items& as_array() const { return array_; }
    Items& as_array() { return array_; }
    const std::vector<Member>& members() const { return members_; }

    // Object access. set() replaces an existing key, keeping its position.
    Value& set(const std::string& key, Value v);
    const Value* find(const std::string& key) const;
    void push_back(Value v) { array_.push_back(std::move(v)); }
    std::size_t size() const { return type_ == Type::Object ? members_.size() : array_.size(); }

  private:
    Type type_ = Type::Null;
    bool bool_ = false;
    std::int64_t int_ = 0;
    double double_ = 0.0;
    std::string string_;
    Items array_;
    std::vector<Member> members_;
};

// Parses one JSON document; throws HarnessError naming line and column on malformed input.
Value parse(const std::string& text, const std::string& source_name);

// Serialises with two-space indentation; arrays of plain numbers stay on one line so that
// per-iteration time arrays remain readable. Non-finite doubles are written as null.
std::string dump(const Value& v);

// Shortest round-trip text of a double ("12.5", "1e-06"); "null" when not finite.
std::string format_double(double d);

}  // namespace moesim::cal::json
