// The key=value list syntax of settings with named fields, and its number fields.
#include "features/key_values.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dynamiccl {
namespace {

std::string keysText(std::initializer_list<std::string_view> known) {
  std::string out;
  for (std::string_view k : known) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

}  // namespace

Expected<std::vector<KeyValue>> parseKeyValues(std::string_view text, std::initializer_list<std::string_view> known) {
  std::vector<KeyValue> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find_first_of(",;", pos), text.size());
    const std::string_view item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.find_first_not_of(' ') == std::string_view::npos) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      return makeError("expected key=value, got \"" + std::string(item) + "\"");
    const KeyValue kv{item.substr(0, eq), item.substr(eq + 1)};
    if (std::find(known.begin(), known.end(), kv.key) == known.end())
      return makeError("unknown key \"" + std::string(kv.key) + "\" (" + keysText(known) + ")");
    if (std::any_of(out.begin(), out.end(), [&](const KeyValue& seen) { return seen.key == kv.key; }))
      return makeError("key \"" + std::string(kv.key) + "\" given twice");
    out.push_back(kv);
  }
  return out;
}

std::string numberText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::optional<double> wholeReal(std::string_view text, double lo, double hi, bool loExcluded) {
  const std::string value(text);
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(value.c_str(), &end);
  if (errno != 0 || end == value.c_str() || *end != '\0' || !std::isfinite(x) || x < lo || x > hi ||
      (loExcluded && x == lo))
    return std::nullopt;
  return x == 0 ? 0.0 : x;  // "-0" reads as 0
}

std::optional<int64_t> wholeInteger(std::string_view text, int64_t lo, int64_t hi) {
  const std::string value(text);
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(value.c_str(), &end, 10);
  if (errno != 0 || end == value.c_str() || *end != '\0' || x < lo || x > hi) return std::nullopt;
  return static_cast<int64_t>(x);
}

Expected<double> realField(const KeyValue& kv, double lo, double hi, bool loExcluded) {
  if (auto x = wholeReal(kv.value, lo, hi, loExcluded)) return *x;
  return makeError(std::string(kv.key) + " must be a number in " + (loExcluded ? "(" : "") + numberText(lo) +
                   (loExcluded ? ", " : "..") + numberText(hi) + (loExcluded ? "]" : ""));
}

Expected<int64_t> integerField(const KeyValue& kv, int64_t lo, int64_t hi) {
  if (auto x = wholeInteger(kv.value, lo, hi)) return *x;
  return makeError(std::string(kv.key) + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
}

}  // namespace dynamiccl
