// The value checks shared by the subcommands (CLI11 validators run on the text, before conversion).
#include "offline/cli/value_checks.h"

#include <charconv>
#include <cstdint>
#include <string>

#include "features/features.h"
#include "plugin/abi/abi.h"
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
  static const CLI::Validator check(
      [](std::string& s) { return wholeNumberIn(s, 1, uint64_t{1} << 62, "a size in bytes"); }, "BYTES");
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

}  // namespace dynamiccl::cli
