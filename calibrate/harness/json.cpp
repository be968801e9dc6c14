// JSON value methods and writer (see json.hpp).
#include "json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace moesim::cal::json {

Value& Value::set(const std::string& key, Value v) {
    if (type_ == Type::Null) type_ = Type::Object;
    for (auto& m : members_) {
        if (m.first == key) {
            m.second = std::move(v);
            return m.second;
        }
    }
    members_.emplace_back(key, std::move(v));
    return members_.back().second;
}

const Value* Value::find(const std::string& key) const {
    for (const auto& m : members_)
        if (m.first == key) return &m.second;
    return nullptr;
}

std::string format_double(double d) {
    if (!std::isfinite(d)) return "null";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, res.ptr);
}

namespace {

void write_string(std::string& out, const std::string& s) {
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
}

bool all_numbers(const Value& v) {
    for (const auto& x : v.as_array())
        if (!x.is_number()) return false;
    return true;
}

void write_value(std::string& out, const Value& v, int indent) {
    const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
    const std::string close_pad(static_cast<std::size_t>(indent), ' ');
    switch (v.type()) {
        case Value::Type::Null: out += "null"; break;
        case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; break;
        case Value::Type::Int: out += std::to_string(v.as_int()); break;
        case Value::Type::Double: out += format_double(v.as_double()); break;
        case Value::Type::String: write_string(out, v.as_string()); break;
        case Value::Type::Array: {
            const auto& a = v.as_array();
            if (a.empty()) {
                out += "[]";
                break;
            }
            if (all_numbers(v)) {  // compact: times_us arrays, size lists
                out.push_back('[');
                for (std::size_t i = 0; i < a.size(); ++i) {
                    if (i) out += ", ";
                    write_value(out, a[i], indent);
                }
                out.push_back(']');
                break;
            }
            out += "[\n";
            for (std::size_t i = 0; i < a.size(); ++i) {
                out += pad;
                write_value(out, a[i], indent + 2);
                out += (i + 1 < a.size()) ? ",\n" : "\n";
            }
            out += close_pad + "]";
            break;
        }
        case Value::Type::Object: {
            const auto& m = v.members();
            if (m.empty()) {
                out += "{}";
                break;
            }
            out += "{\n";
            for (std::size_t i = 0; i < m.size(); ++i) {
                out += pad;
                write_string(out, m[i].first);
                out += ": ";
                write_value(out, m[i].second, indent + 2);
                out += (i + 1 < m.size()) ? ",\n" : "\n";
            }
            out += close_pad + "}";
            break;
        }
    }
}

}  // namespace

std::string dump(const Value& v) {
    std::string out;
    write_value(out, v, 0);
    out.push_back('\n');
    return out;
}

}  // namespace moesim::cal::json
