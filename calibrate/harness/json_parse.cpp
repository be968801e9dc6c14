// Recursive-descent JSON parser (RFC 8259) for the --shapes input. Errors name line and column.
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "errors.hpp"
#include "json.hpp"

namespace moesim::cal::json {
namespace {

class Parser {
  public:
    Parser(const std::string& text, const std::string& source) : s_(text), source_(source) {}

    Value document() {
        Value v = value(0);
        skip_ws();
        if (pos_ != s_.size()) fail("trailing characters after the JSON document");
        return v;
    }

  private:
    const std::string& s_;
    const std::string& source_;
    std::size_t pos_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        std::size_t line = 1, col = 1;
        for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw HarnessError(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) +
                           ": invalid JSON: " + what);
    }

    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    char peek() {
        skip_ws();
        if (pos_ >= s_.size()) fail("unexpected end of input");
        return s_[pos_];
    }

    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }

    bool match_word(const char* w) {
        std::size_t n = std::char_traits<char>::length(w);
        if (s_.compare(pos_, n, w) == 0) {
            pos_ += n;
            return true;
        }
        return false;
    }

    Value value(int depth) {
        if (depth > 64) fail("nesting deeper than 64 levels");
        char c = peek();
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value(string());
        if (match_word("true")) return Value(true);
        if (match_word("false")) return Value(false);
        if (match_word("null")) return Value();
        if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
        fail(std::string("unexpected character '") + c + "'");
    }

    Value object(int depth) {
        expect('{');
        Value obj = Value::object();
        if (peek() == '}') {
            ++pos_;
            return obj;
        }
        for (;;) {
            if (peek() != '"') fail("expected a string key");
            std::string key = string();
            if (obj.find(key)) fail("duplicate key \"" + key + "\"");
            expect(':');
            obj.set(key, value(depth + 1));
            char c = peek();
            ++pos_;
            if (c == '}') return obj;
            if (c != ',') {
                --pos_;
                fail("expected ',' or '}'");
            }
        }
    }

    Value array(int depth) {
        expect('[');
        Value arr = Value::array();
        if (peek() == ']') {
            ++pos_;
            return arr;
        }
        for (;;) {
            arr.push_back(value(depth + 1));
            char c = peek();
            ++pos_;
            if (c == ']') return arr;
            if (c != ',') {
                --pos_;
                fail("expected ',' or ']'");
            }
        }
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    unsigned hex4() {
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= static_cast<unsigned>(h - 'A' + 10);
            else
                fail("bad hex digit in \\u escape");
        }
        return v;
    }

    std::string string() {
        expect('"');
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) fail("unterminated string");
            char c = s_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            if (pos_ >= s_.size()) fail("unterminated escape");
            char e = s_[pos_++];
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && match_word("\\u")) {
                        unsigned lo = hex4();
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default: fail(std::string("bad escape '\\") + e + "'");
            }
        }
    }

    Value number() {
        std::size_t start = pos_;
        bool integral = true;
        if (s_[pos_] == '-') ++pos_;
        while (pos_ < s_.size()) {
            char c = s_[pos_];
            if (std::isdigit(static_cast<unsigned char>(c))) {
                ++pos_;
                continue;
            }
            if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                ++pos_;
                continue;
            }
            break;
        }
        const char* first = s_.data() + start;
        const char* last = s_.data() + pos_;
        if (integral) {
            long long v = 0;
            auto r = std::from_chars(first, last, v);
            if (r.ec == std::errc() && r.ptr == last) return Value(v);
        }
        double d = 0.0;
        auto r = std::from_chars(first, last, d);
        if (r.ec != std::errc() || r.ptr != last) {
            pos_ = start;
            fail("malformed number");
        }
        return Value(d);
    }
};

}  // namespace

Value parse(const std::string& text, const std::string& source_name) { return Parser(text, source_name).document(); }

}  // namespace moesim::cal::json
