// The input check's records: how the ranks' input records differ, the agreement all ranks adopt (pure),
// its keys, and the random names the records and sets use.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <utility>

#include "plugin/inputs/inputs_check.h"

namespace dynamiccl::plugin {
namespace {

constexpr const char* kVerdictHeader = "DYNAMICCL-INPUTS-VERDICT-3";
constexpr size_t kShownChars = 80;

struct Parsed {
  std::string who;
  std::string body;  // everything after the who line: what is compared
  std::vector<std::pair<std::string, std::string>> fields;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

std::optional<Parsed> parse(const std::string& record) {
  const std::vector<std::string> ls = lines(record);
  if (ls.size() < 2 || ls[0] != kInputsHeader || ls[1].rfind("who=", 0) != 0) return std::nullopt;
  Parsed p;
  p.who = ls[1].substr(4);
  p.body = record.substr(std::min(record.size(), ls[0].size() + ls[1].size() + 2));
  for (size_t i = 2; i < ls.size(); ++i) {
    const size_t eq = ls[i].find('=');
    if (eq == std::string::npos) return std::nullopt;
    p.fields.emplace_back(ls[i].substr(0, eq), ls[i].substr(eq + 1));
  }
  return p;
}

std::string shown(const std::string& v) {
  std::string out;
  for (char c : v.substr(0, kShownChars)) out += (c >= 32 && c < 127) ? c : '?';  // someone else's bytes
  return "\"" + out + (v.size() > kShownChars ? "...\"" : "\"");
}

// "DYNAMICCL_TRUST is "all" there, "verified" on 7 rank(s)": the first field where `odd` leaves `ref`;
// "" where no field differs.
std::string firstDifference(const Parsed& odd, const Parsed& ref, size_t refCount) {
  const std::string others = " on " + std::to_string(refCount) + " rank(s)";
  for (size_t i = 0; i < odd.fields.size() || i < ref.fields.size(); ++i) {
    if (i >= odd.fields.size()) return ref.fields[i].first + " is missing there, " + shown(ref.fields[i].second) + others;
    if (i >= ref.fields.size()) return odd.fields[i].first + " is " + shown(odd.fields[i].second) + " there, absent" + others;
    if (odd.fields[i].first != ref.fields[i].first)
      return "field " + shown(odd.fields[i].first) + " stands where " + ref.fields[i].first + " does" + others;
    if (odd.fields[i].second != ref.fields[i].second)
      return odd.fields[i].first + " is " + shown(odd.fields[i].second) + " there, " + shown(ref.fields[i].second) + others;
  }
  return "";
}

}  // namespace

std::string whyInputsDiffer(const std::string& mine, uint64_t mineCount, const std::optional<std::string>& other,
                            bool otherOpens, uint64_t nRanks) {
  const std::optional<Parsed> me = parse(mine), them = other ? parse(*other) : std::nullopt;
  const uint64_t otherCount = nRanks > mineCount ? nRanks - mineCount : 0;
  // The reference is the inputs most ranks hold (a tie: this rank's), so one odd rank is the one named.
  const bool mineIsReference = mineCount >= otherCount;
  const uint64_t odd = mineIsReference ? otherCount : mineCount;
  std::string why = std::to_string(odd) + " of " + std::to_string(nRanks) + " ranks differ from the rest; first ";
  if (!me || !them) return why + "a record that does not parse (not written by this plugin)";
  const Parsed& oddOne = mineIsReference ? *them : *me;
  const Parsed& ref = mineIsReference ? *me : *them;
  std::string field = firstDifference(oddOne, ref, mineIsReference ? mineCount : otherCount);
  // Records alike in every field they say hold different keys: the token (never written) differs.
  if (field.empty())
    field = otherOpens ? "the records differ"
                       : "its input record is not sealed under this job's key (written by another job, or by a rank "
                         "whose DYNAMICCL_COORD_TOKEN_FILE holds another token)";
  return why + "the rank " + oddOne.who + ": " + field;
}

// Header, state, why (empty when agreed), and the proposal the ranks confirmed.
std::string encodeAgreement(const InputsAgreement& v) {
  std::string why = v.agree ? "" : v.why;
  for (char& c : why) c = c == '\n' ? ' ' : c;
  return std::string(kVerdictHeader) + "\n" + (v.agree ? "agree" : v.missing ? "missing" : "differ") + "\n" + why +
         "\nproposal=" + v.proposal + "\n";
}

InputsAgreement decodeAgreement(const std::string& bytes) {
  const std::vector<std::string> ls = lines(bytes);
  if (ls.size() != 4 || ls[0] != kVerdictHeader || ls[3].rfind("proposal=", 0) != 0 ||
      (ls[1] != "agree" && ls[1] != "differ" && ls[1] != "missing"))
    return {false, false, "the agreement record does not parse (not written by this plugin)", {}, {}};
  return {ls[1] == "agree", ls[1] == "missing", ls[2], ls[3].substr(9), {}};
}

std::string inputsKey(uint64_t commId, const std::string& record, const std::string& token) {
  // The compared inputs: the record less its header and who lines (who differs on every rank).
  const std::vector<std::string> ls = lines(record);
  const size_t skip = ls.size() >= 2 ? ls[0].size() + ls[1].size() + 2 : 0;
  return coord::hex(sha256("dynamiccl-inputs-key-1\n" + std::to_string(commId) + "\n" +
                                  coord::hex(sha256(token)) + "\n" + record.substr(std::min(skip, record.size()))));
}

std::string epochKeyAfter(const std::string& inputsKey, const InputsAgreement& adopted) {
  return coord::hex(hmacSha256(inputsKey, "dynamiccl-epochs-1\n" + adopted.recordDigest));
}

std::string inputsGroup(const std::string& inputsKey) {
  return coord::hex(sha256("dynamiccl-inputs-group-1\n" + inputsKey)).substr(0, 32);
}

std::string membersKey(uint64_t commId, const std::string& token) {
  return coord::hex(sha256("dynamiccl-inputs-members-1\n" + std::to_string(commId) + "\n" + token));
}

std::string epochKeyUnchecked(uint64_t commId, const std::string& token) {
  return coord::hex(sha256("dynamiccl-epochs-unchecked-1\n" + std::to_string(commId) + "\n" + token));
}

std::string randomHex(int words) {
  std::random_device entropy;
  std::string out;
  char word[9];
  for (int i = 0; i < words; ++i) {
    std::snprintf(word, sizeof word, "%08x", entropy());
    out += word;
  }
  return out;
}

}  // namespace dynamiccl::plugin
