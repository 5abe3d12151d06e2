// The value checks shared by the subcommands (CLI11 validators run on the text, before conversion).
#include "offline/cli/value_checks.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>

#include "features/features.h"
#include "abi/abi.h"
#include "policy/policy.h"

namespace dynamiccl::cli {
namespace {

// The text as a whole number in [lo, hi]; "-1", "1e3", "12abc" and overflow are not.
std::string wholeNumberIn(const std::string& text, uint64_t lo, uint64_t hi, const char* what) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < lo || v > hi)
    return std::string(what) + " must be a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "], not '" + text + "'";
  return {};
}

// A size as nccl-tests and this tool print it: a whole number with an optional binary suffix K, M, G
// or T (also written KiB, KB, k ...: all powers of 1024), rewritten in place to the whole number.
std::string sizeIn(std::string& text, uint64_t lo, uint64_t hi) {
  const std::string what = "a size in bytes (e.g. 4096, 64K, 1M, 2G)";
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string suffix = text.substr(digits);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.erase(suffix.size() - 2);
  else if (suffix.ends_with("B")) suffix.erase(suffix.size() - 1);
  static const std::string kUnits = "KMGT";
  const size_t unit = suffix.empty() ? std::string::npos : kUnits.find(suffix);
  if (digits == 0 || suffix.size() > 1 || (!suffix.empty() && unit == std::string::npos))
    return what + " must be a whole number with an optional K, M, G or T, not '" + text + "'";
  std::string number = text.substr(0, digits);
  if (auto e = wholeNumberIn(number, 0, hi, what.c_str()); !e.empty()) return e;
  uint64_t v = std::stoull(number);
  for (size_t i = 0; unit != std::string::npos && i <= unit; ++i) {
    if (v > hi / 1024) return what + " must be at most " + std::to_string(hi) + ", not '" + text + "'";
    v *= 1024;
  }
  if (v < lo || v > hi)
    return what + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" + text + "'";
  text = std::to_string(v);
  return {};
}

std::string collectiveNames() {
  std::string names;
  for (int c = 0; c < kNumCollectives; ++c) names += (c ? ", " : "") + std::string(collectiveName(Collective(c)));
  return names;
}

}  // namespace

const CLI::Validator& collectiveCheck() {
  static const CLI::Validator check(
      [](std::string& s) {
        return parseCollective(s) ? std::string() : "unknown collective '" + s + "' (" + collectiveNames() + ")";
      },
      "COLLECTIVE");
  return check;
}

const CLI::Validator& ncclVersionCheck() {
  static const CLI::Validator check(
      [](std::string& s) {
        return abi::parseNcclVersion(s) ? std::string()
                                        : "'" + s + "' is not an NCCL version (expected e.g. 2.32.6, 2.28 or 23206)";
      },
      "VERSION");
  return check;
}

const CLI::Validator& byteCountCheck() {
  static const CLI::Validator check([](std::string& s) { return sizeIn(s, 1, uint64_t{1} << 62); }, "BYTES", "size");
  return check;
}

const CLI::Validator& byteCountOrZeroCheck() {
  static const CLI::Validator check([](std::string& s) { return sizeIn(s, 0, INT32_MAX); }, "BYTES", "size");
  return check;
}

const CLI::Validator& channelCountCheck() {
  static const CLI::Validator check(
      [](std::string& s) { return wholeNumberIn(s, 0, policy::kMaxChannels, "a channel count"); }, "CHANNELS");
  return check;
}

const CLI::Validator& countCheck() {
  static const CLI::Validator check([](std::string& s) { return wholeNumberIn(s, 0, INT32_MAX, "a count"); },
                                    "COUNT");
  return check;
}

void applyConventions(CLI::App& app) {
  // CLI11's check() runs a validator on a copy: a size check must convert "1M" in place, so it modifies.
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_default_str() == "[]") opt->default_str("");  // an empty list is no default to show
    try {
      opt->get_validator("size")->non_modifying(false);
    } catch (const CLI::OptionNotFound&) {
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) applyConventions(*sub);
}

}  // namespace dynamiccl::cli
