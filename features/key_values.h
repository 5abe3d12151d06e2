// "key=value[,key=value...]": the one syntax of a setting with named fields (DYNAMICCL_TOPO,
// DYNAMICCL_WORKLOAD, and the plugin's grouped settings), read and checked in one place.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "features/expected.h"

namespace dynamiccl {

struct KeyValue {
  std::string_view key, value;
};

// Items are separated by ',' or ';' (blank items skipped); each key must be one of `known` and appear
// once, each value non-empty. The error names the offending item and the keys known.
Expected<std::vector<KeyValue>> parseKeyValues(std::string_view text, std::initializer_list<std::string_view> known);

// A whole text as a finite number in [lo, hi] ((lo, hi] where lo is excluded) / as an integer in
// [lo, hi]; nullopt for anything else (trailing text, overflow, out of range). Every setting's rule.
std::optional<double> wholeReal(std::string_view text, double lo, double hi, bool loExcluded = false);
std::optional<int64_t> wholeInteger(std::string_view text, int64_t lo, int64_t hi);
// A number as the settings' messages and their line show it ("%g").
std::string numberText(double x);

// A field's value as a number in [lo, hi] ((lo, hi] where lo is excluded), or an integer in [lo, hi];
// the error names the key and the range.
Expected<double> realField(const KeyValue& kv, double lo, double hi, bool loExcluded = false);
Expected<int64_t> integerField(const KeyValue& kv, int64_t lo, int64_t hi);

}  // namespace dynamiccl
