#include "io/json.h"

#include <cstdio>
#include <stdexcept>

namespace alloy::io {

const Json* Json::find(const std::string& key) const {
  for (auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

struct Parser {
  const std::string& s;
  const char* op;
  size_t i = 0;

  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error(std::string("[") + op + "] Invalid JSON header: " + what + " at byte " +
                             std::to_string(i));
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    std::string w(word);
    if (s.compare(i, w.size(), w) == 0) {
      i += w.size();
      return true;
    }
    return false;
  }

  void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  uint32_t hex4() {
    if (i + 4 > s.size()) fail("short \\u escape");
    uint32_t v = static_cast<uint32_t>(std::stoul(s.substr(i, 4), nullptr, 16));
    i += 4;
    return v;
  }

  std::string str() {
    ws();
    if (i >= s.size() || s[i] != '"') fail("expected a string");
    ++i;
    std::string out;
    while (true) {
      if (i >= s.size()) fail("unterminated string");
      char c = s[i++];
      if (c == '"') break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) fail("unterminated escape");
      char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          // A surrogate pair encodes one code point above U+FFFF.
          if (cp >= 0xD800 && cp < 0xDC00 && s.compare(i, 2, "\\u") == 0) {
            i += 2;
            uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
    return out;
  }

  Json value(int depth) {
    if (depth > 64) fail("nesting too deep");
    ws();
    Json v;
    if (i >= s.size()) fail("unexpected end");
    char c = s[i];
    if (c == '{') {
      ++i;
      v.kind = Json::Kind::object;
      if (eat('}')) return v;
      do {
        std::string k = str();
        expect(':');
        v.members.emplace_back(std::move(k), value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i;
      v.kind = Json::Kind::array;
      if (eat(']')) return v;
      do {
        v.items.push_back(value(depth + 1));
      } while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::Kind::string;
      v.string = str();
    } else if (literal("null")) {
      v.kind = Json::Kind::null;
    } else if (literal("true")) {
      v.kind = Json::Kind::boolean;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Json::Kind::boolean;
    } else {
      size_t start = i;
      while (i < s.size() && (isdigit(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '+' || s[i] == '.' ||
                              s[i] == 'e' || s[i] == 'E')) {
        ++i;
      }
      if (start == i) fail("unexpected character");
      std::string num = s.substr(start, i - start);
      v.kind = Json::Kind::number;
      v.is_integer = num.find_first_of(".eE") == std::string::npos;
      try {
        if (v.is_integer) v.integer = std::stoll(num);
        v.number = std::stod(num);
      } catch (const std::exception&) {
        fail("bad number");
      }
    }
    return v;
  }
};

}  // namespace

Json parse_json(const std::string& text, const char* op) {
  Parser p{text, op};
  Json v = p.value(0);
  p.ws();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

}  // namespace alloy::io
