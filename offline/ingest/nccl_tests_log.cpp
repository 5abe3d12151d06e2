// nccl-tests stdout (any *_perf binary): tables, device lines, env lines, and hints from the file's path.
// Lines are matched by hand (no std::regex: it ran every line through up to nine backtracking automata and
// made the fuzzer crawl at ~50 inputs/s). Each matcher below reproduces one former regex exactly, quoted
// above it, including where regex_search would start and which text each group captured.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

#include "offline/ingest/ingest.h"

namespace dynamiccl::ingest {
namespace {

std::vector<std::string_view> splitWords(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

template <typename T>
bool parseNumber(std::string_view s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

double parseReal(std::string_view s) {
  double v = NAN;
  return parseNumber(s, v) ? v : NAN;
}

// Counts from a run of digits, saturated at 2^24 (beyond any real job) instead of std::stoi's throw,
// so that sums and products of two of them still fit an int.
int countFrom(std::string_view digits) {
  constexpr int64_t kMaxCount = int64_t{1} << 24;
  int64_t v = kMaxCount;
  return parseNumber(digits, v) && v < kMaxCount ? static_cast<int>(v) : static_cast<int>(kMaxCount);
}

// ---- Hand-written line matchers ------------------------------------------------------------------
// Character classes as std::regex saw them in the classic "C" locale: \s, \d, [A-Z0-9_].
bool isSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) { return (c >= 'A' && c <= 'Z') || isDigit(c) || c == '_'; }

// A position in a line with the regex atoms the patterns used. Every atom is greedy and, in these
// patterns, followed by something it cannot match, so no backtracking is needed (the two exceptions,
// 0*(\d+) and (.*\S), are resolved where they are used).
struct Scan {
  std::string_view s;
  size_t i = 0;

  bool done() const { return i >= s.size(); }
  std::string_view rest() const { return s.substr(std::min(i, s.size())); }
  bool lit(std::string_view w) {
    if (!rest().starts_with(w)) return false;
    i += w.size();
    return true;
  }
  bool oneOf(std::string_view set) {  // [= ]
    if (done() || set.find(s[i]) == std::string_view::npos) return false;
    ++i;
    return true;
  }
  template <typename Pred>
  std::string_view run(Pred pred) {  // pred* ; empty when nothing matched
    const size_t from = i;
    while (i < s.size() && pred(s[i])) ++i;
    return s.substr(from, i - from);
  }
  bool ws() { return !run(isSpace).empty(); }                              // \s+
  std::string_view digits() { return run(isDigit); }                      // (\d+) when non-empty
  std::string_view nonSpace() { return run([](char c) { return !isSpace(c); }); }  // (\S+) when non-empty
  std::string_view ncclName() {  // (NCCL_[A-Z0-9_]+)
    const size_t from = i;
    if (!lit("NCCL_") || run(isNameChar).empty()) return i = from, std::string_view{};
    return s.substr(from, i - from);
  }
  std::string_view zerosThenDigits() {  // 0*(\d+): leading zeros dropped, but the group keeps one digit
    const std::string_view all = digits();
    const size_t z = all.find_first_not_of('0');
    return all.empty() ? all : all.substr(z == std::string_view::npos ? all.size() - 1 : z);
  }
};

// regex_search for a pattern that begins with the literal `anchor`: try each occurrence from the left
// (overlapping ones too); `match` gets a Scan at the occurrence and returns nullopt on failure.
template <typename Match>
auto searchAt(std::string_view line, std::string_view anchor, Match match) -> decltype(match(Scan{})) {
  for (size_t at = line.find(anchor); at != std::string_view::npos; at = line.find(anchor, at + 1))
    if (auto found = match(Scan{line, at + anchor.size()})) return found;
  return std::nullopt;
}

struct DeviceLine {
  std::string_view rank, host, gpu;
  std::string_view lastRank;  // a condensed line's range end ("Rank 0-7 ... devices 0-7"); empty otherwise
};

// A device list condensed to one line per host, as some archives keep it:
// Rank\s+(\d+)-(\d+)\s+Group\s+\d+\s+on\s+(\S+)\s+devices\s+\S+\s+(.*\S)
std::optional<DeviceLine> matchCondensedDevices(std::string_view line) {
  return searchAt(line, "Rank", [](Scan s) -> std::optional<DeviceLine> {
    DeviceLine d;
    if (!s.ws() || (d.rank = s.digits()).empty() || !s.lit("-") || (d.lastRank = s.digits()).empty() || !s.ws() ||
        !s.lit("Group") || !s.ws() || s.digits().empty() || !s.ws() || !s.lit("on") || !s.ws() ||
        (d.host = s.nonSpace()).empty() || !s.ws() || !s.lit("devices") || !s.ws() || s.nonSpace().empty() || !s.ws() ||
        s.done())
      return std::nullopt;
    std::string_view tail = s.rest();
    tail = tail.substr(0, tail.find_first_of("\r\n"));
    size_t end = tail.size();
    while (end > 0 && isSpace(tail[end - 1])) --end;
    d.gpu = tail.substr(0, end);
    return d;
  });
}

// Rank\s+(\d+)\s+(Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*\S); rccl-tests
// before 2025 printed no Group (ROCm/rccl-tests src/common.cu).
std::optional<DeviceLine> matchDevice(std::string_view line) {
  return searchAt(line, "Rank", [](Scan s) -> std::optional<DeviceLine> {
    DeviceLine d;
    if (!s.ws() || (d.rank = s.digits()).empty() || !s.ws()) return std::nullopt;
    if (s.lit("Group") && (!s.ws() || s.digits().empty() || !s.ws())) return std::nullopt;
    if (!s.lit("Pid") || !s.ws() || s.digits().empty() || !s.ws() || !s.lit("on") || !s.ws() ||
        (d.host = s.nonSpace()).empty() || !s.ws() || !s.lit("device") || !s.ws() || s.digits().empty() || !s.ws() ||
        !s.lit("["))
      return std::nullopt;
    const size_t close = s.rest().find(']');
    if (close == std::string_view::npos) return std::nullopt;
    s.i += close + 1;
    if (!s.ws() || s.done()) return std::nullopt;
    // (.*\S): '.' stops at '\r' (ECMAScript line terminator); \s+ above may have crossed one.
    std::string_view tail = s.rest();
    tail = tail.substr(0, tail.find_first_of("\r\n"));
    size_t end = tail.size();
    while (end > 0 && isSpace(tail[end - 1])) --end;
    d.gpu = tail.substr(0, end);  // non-empty: tail starts at a non-space
    return d;
  });
}

// (NCCL|RCCL) version (: )?(\S+): NCCL's "NCCL version 2.21.5+cuda12.4", RCCL's "RCCL version 2.20.5+hip6.2"
// (ROCm 6.2 and before) and "RCCL version : 2.22.3-HEAD:7d8d67c" (after), at NCCL_DEBUG=VERSION or INFO.
struct LibraryVersion {
  std::string_view library, version;  // "NCCL" or "RCCL"; the word as printed
};
std::optional<LibraryVersion> matchLibraryVersion(std::string_view line) {
  for (std::string_view library : {"NCCL", "RCCL"}) {
    auto v = searchAt(line, std::string(library) + " version ", [](Scan s) -> std::optional<std::string_view> {
      s.lit(": ");
      const std::string_view v = s.nonSpace();
      return v.empty() || !isDigit(v[0]) ? std::nullopt : std::optional(v);
    });
    if (v) return LibraryVersion{library, *v};
  }
  return std::nullopt;
}

// rccl-tests' own version line: "rccl-tests: Version develop:448c4c7" (no '#', before 2026) or
// "# rccl-tests version ..." (ROCm/rocm-systems): the numbers come from RCCL, the host from here.
bool isRcclTestsVersionLine(std::string_view line) {
  return line.find("rccl-tests: Version") != std::string_view::npos ||
         line.find("rccl-tests version") != std::string_view::npos;
}

// The version number of a library version word: "2.22.3-HEAD:7d8d67c" and "2.21.5+cuda12.4" -> "2.22.3", "2.21.5".
std::string versionNumber(std::string_view word) {
  size_t end = 0;
  while (end < word.size() && (isDigit(word[end]) || word[end] == '.')) ++end;
  return std::string(word.substr(0, end));
}

// nccl-library=(\d+)
std::optional<std::string_view> matchLibrary(std::string_view line) {
  return searchAt(line, "nccl-library=", [](Scan s) -> std::optional<std::string_view> {
    const std::string_view v = s.digits();
    return v.empty() ? std::nullopt : std::optional(v);
  });
}

// nThread\s+(\d+)\s+nGpus\s+(\d+)
std::optional<std::pair<std::string_view, std::string_view>> matchThreads(std::string_view line) {
  return searchAt(line, "nThread", [](Scan s) -> std::optional<std::pair<std::string_view, std::string_view>> {
    std::string_view threads, gpus;
    if (!s.ws() || (threads = s.digits()).empty() || !s.ws() || !s.lit("nGpus") || !s.ws() ||
        (gpus = s.digits()).empty())
      return std::nullopt;
    return std::pair{threads, gpus};
  });
}

struct EnvPair {
  std::string_view name, value;
};

// (NCCL_[A-Z0-9_]+)=(\S+) at the scan position.
std::optional<EnvPair> matchAssignment(Scan& s) {
  EnvPair e;
  if ((e.name = s.ncclName()).empty() || !s.lit("=") || (e.value = s.nonSpace()).empty()) return std::nullopt;
  return e;
}

// ^\s*(?:export\s+|\+\s+|-x\s+)?(NCCL_[A-Z0-9_]+)=(\S+)\s*$
std::optional<EnvPair> matchEnvLine(std::string_view line) {
  Scan s{line};
  s.ws();
  for (std::string_view prefix : {"export", "+", "-x"}) {  // none of them starts like "NCCL_": no retry without
    Scan t = s;
    if (t.lit(prefix) && t.ws()) {
      s = t;
      break;
    }
  }
  auto e = matchAssignment(s);
  s.ws();
  return e && s.done() ? e : std::nullopt;
}

// (NCCL_[A-Z0-9_]+) set by environment to (\S+)
std::optional<EnvPair> matchEnvInfo(std::string_view line) {
  for (size_t at = line.find("NCCL_"); at != std::string_view::npos; at = line.find("NCCL_", at + 1)) {
    Scan s{line, at};
    EnvPair e;
    e.name = s.ncclName();
    if (!e.name.empty() && s.lit(" set by environment to ") && !(e.value = s.nonSpace()).empty()) return e;
  }
  return std::nullopt;
}

// Every non-overlapping -x\s+(NCCL_[A-Z0-9_]+)=(\S+), as sregex_iterator walked them.
std::vector<EnvPair> matchEnvFlags(std::string_view line) {
  std::vector<EnvPair> flags;
  for (size_t at = line.find("-x"); at != std::string_view::npos;) {
    Scan s{line, at + 2};
    auto e = s.ws() ? matchAssignment(s) : std::nullopt;
    if (e) flags.push_back(*e);
    at = line.find("-x", e ? s.i : at + 1);
  }
  return flags;
}

// (?:^|\s)(?:-np\s+|--ntasks[= ])(\d+): an option starting the line or after a space.
std::optional<std::string_view> matchNp(std::string_view line) {
  for (size_t at = line.find('-'); at != std::string_view::npos; at = line.find('-', at + 1)) {
    if (at > 0 && !isSpace(line[at - 1])) continue;
    Scan np{line, at}, ntasks{line, at};
    if (np.lit("-np") && np.ws())
      if (auto d = np.digits(); !d.empty()) return d;
    if (ntasks.lit("--ntasks") && ntasks.oneOf("= "))
      if (auto d = ntasks.digits(); !d.empty()) return d;
  }
  return std::nullopt;
}

// -(?:npernode\s+|-ntasks-per-node[= ])(\d+)
std::optional<std::string_view> matchNpernode(std::string_view line) {
  return searchAt(line, "-", [](Scan s) -> std::optional<std::string_view> {
    Scan npernode = s, ntasks = s;
    if (npernode.lit("npernode") && npernode.ws())
      if (auto d = npernode.digits(); !d.empty()) return d;
    if (ntasks.lit("-ntasks-per-node") && ntasks.oneOf("= "))
      if (auto d = ntasks.digits(); !d.empty()) return d;
    return std::nullopt;
  });
}
// ---- end of line matchers ------------------------------------------------------------------------

int64_t parseWrong(std::string_view s) {
  int64_t v = -1;
  return parseNumber(s, v) ? v : -1;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// Where the time columns sit: block start after "root" and block width (4, or more with i_min... columns).
struct TableLayout {
  size_t first_block = 5;
  size_t block_width = 4;
  // rccl-tests' "algo proto nchannels" columns (-M 1 in 2025, -A 1 later): what RCCL reports it ran.
  size_t algo_column = 0, proto_column = 0, channels_column = 0;  // 0: not printed
};

std::optional<TableLayout> layoutFromHeader(const std::vector<std::string_view>& words) {
  std::vector<size_t> times;
  size_t root = std::string_view::npos;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == "root") root = i;
    if (words[i] == "time" || words[i] == "cputime") times.push_back(i);
  }
  if (root == std::string_view::npos || times.empty() || times[0] < root) return std::nullopt;  // else first_block wraps
  TableLayout layout;
  layout.first_block = times[0] - root - 1 + 5;  // data rows have no leading '#'
  if (times.size() >= 2) layout.block_width = times[1] - times[0];
  for (size_t i = root + 1; i < words.size(); ++i) {  // after the time blocks; data rows have no leading '#'
    const size_t column = i - root - 1 + 5;
    if (words[i] == "algo") layout.algo_column = column;
    if (words[i] == "proto") layout.proto_column = column;
    if (words[i] == "nchannels") layout.channels_column = column;
  }
  return layout;
}

std::optional<NcclTestsRow> parseRow(const std::vector<std::string_view>& w, const TableLayout& layout) {
  NcclTestsRow row;
  if (w.size() < layout.first_block + 4 || !parseNumber(w[0], row.bytes) || !parseNumber(w[1], row.count))
    return std::nullopt;
  if (w[2].empty() || !std::isalpha(static_cast<unsigned char>(w[2][0]))) return std::nullopt;
  row.type = std::string(w[2]);
  row.redop = std::string(w[3]);
  parseNumber(w[4], row.root);
  const size_t o = layout.first_block;
  row.oop_time_us = parseReal(w[o]);
  row.oop_busbw_gbps = parseReal(w[o + 2]);
  row.oop_wrong = parseWrong(w[o + 3]);
  const size_t i = o + layout.block_width;
  if (w.size() >= i + 4) {
    row.ip_time_us = parseReal(w[i]);
    row.ip_busbw_gbps = parseReal(w[i + 2]);
    row.ip_wrong = parseWrong(w[i + 3]);
  }
  if (layout.algo_column && layout.proto_column && w.size() > std::max(layout.algo_column, layout.proto_column)) {
    row.reported_algo = parseAlgo(w[layout.algo_column]);  // names match in any case ("RING", "LL128")
    row.reported_proto = parseProto(w[layout.proto_column]);
    if (row.reported_algo == Algo::Default) row.reported_algo.reset();
    if (row.reported_proto == Proto::Default) row.reported_proto.reset();
  }
  if (layout.channels_column && w.size() > layout.channels_column) {
    int n = -1;
    if (parseNumber(w[layout.channels_column], n) && n > 0) row.reported_channels = n;
  }
  return row;
}

// Collective named by the path: the match ending last (closest to the file name), longest on ties.
std::string collectiveFromPath(std::string_view path) {
  static const std::pair<const char*, const char*> kSpellings[] = {
      {"all_reduce", "allreduce"},         {"allreduce", "allreduce"}, {"all_gather", "allgather"},
      {"allgather", "allgather"},          {"reduce_scatter", "reducescatter"},
      {"reducescatter", "reducescatter"},  {"broadcast", "broadcast"}, {"alltoall", "alltoall"},
      {"sendrecv", "sendrecv"},            {"reduce", "reduce"}};
  const std::string p = lower(path);
  std::string best;
  size_t bestEnd = 0, bestLen = 0;
  for (auto [spelling, name] : kSpellings) {
    const size_t at = p.rfind(spelling);
    if (at == std::string::npos) continue;
    const size_t len = std::string_view(spelling).size();
    if (at + len > bestEnd || (at + len == bestEnd && len > bestLen)) {
      best = name;
      bestEnd = at + len;
      bestLen = len;
    }
  }
  return best;
}

// "Ring" forces Ring; "allreduce:ring;broadcast:tree" forces per collective; lists and "^" exclusions force nothing.
std::string forcedListEntry(const std::string& value, const std::string& collective) {
  std::string global, own;
  std::stringstream entries(value);
  std::string entry;
  while (std::getline(entries, entry, ';')) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) global = entry;
    else if (canonicalCollective(entry.substr(0, colon)) == collective) own = entry.substr(colon + 1);
  }
  const std::string& chosen = own.empty() ? global : own;
  if (chosen.empty() || chosen.find_first_of(",^ ") != std::string::npos) return {};
  return chosen;
}

void applyForcedSettings(NcclTestsSection& s) {
  if (auto it = s.env.find("NCCL_ALGO"); it != s.env.end())
    if (auto a = parseAlgo(forcedListEntry(it->second, s.collective))) s.forced_algo = *a;
  if (auto it = s.env.find("NCCL_PROTO"); it != s.env.end())
    if (auto p = parseProto(forcedListEntry(it->second, s.collective))) s.forced_proto = *p;
  // "NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8" (one line setting both, as sweep drivers print it) sets
  // each name in the chain to the last value.
  std::vector<std::pair<std::string, std::string>> chained;
  for (auto& [name, value] : s.env)
    if (value.starts_with("NCCL_") && value.find('=') != std::string::npos) {
      std::string_view chain = value;
      const std::string last(chain.substr(chain.rfind('=') + 1));
      for (size_t eq = chain.find('='); eq != std::string_view::npos; chain.remove_prefix(eq + 1), eq = chain.find('='))
        if (chain.starts_with("NCCL_") && !s.env.contains(std::string(chain.substr(0, eq))))
          chained.emplace_back(std::string(chain.substr(0, eq)), last);
      value = last;
    }
  for (auto& [name, value] : chained) s.env.try_emplace(name, value);
  for (auto [minKey, maxKey] : {std::pair{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"},
                                std::pair{"NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}}) {
    auto lo = s.env.find(minKey), hi = s.env.find(maxKey);
    int n = 0;
    if (lo != s.env.end() && hi != s.env.end() && lo->second == hi->second && parseNumber(std::string_view(lo->second), n) &&
        n > 0) {
      s.forced_channels = n;
      s.channels_from = std::string(minKey) + "=" + std::string(maxKey) + "=" + lo->second;
    }
  }
  // One setting naming the count (RCCL's and older scripts' NCCL_NCHANNELS): the same forcing.
  if (auto it = s.env.find("NCCL_NCHANNELS"); s.forced_channels < 0 && it != s.env.end()) {
    int n = 0;
    if (parseNumber(std::string_view(it->second), n) && n > 0)
      s.forced_channels = n, s.channels_from = "NCCL_NCHANNELS=" + it->second;
  }
}

// A forced algorithm/protocol one source names, and the words that say where.
struct Claim {
  std::string from;
  std::string algo, proto;  // as written there; empty when this source names none
};

// Directory names such as ".../ring/", ".../auto_ll128/", ".../tree_simple/" mark forced runs
// when the log itself has no env lines (shared/data/l40s-pcie-cs244c). The first such directory wins.
Claim directoryClaim(std::string_view path) {
  std::stringstream parts{std::string(path)};
  std::string part;
  std::vector<std::string> dirs;
  while (std::getline(parts, part, '/')) dirs.push_back(lower(part));
  if (!dirs.empty()) dirs.pop_back();  // the file name is fileNameClaims'
  for (const std::string& d : dirs) {
    const size_t us = d.rfind('_');
    const std::string head = us == std::string::npos ? d : d.substr(0, us);
    const std::string tail = us == std::string::npos ? "" : d.substr(us + 1);
    if (parseAlgo(d) && d != "default") return {"directory " + d, d, ""};
    if (!tail.empty() && parseProto(tail) && (head == "auto" || (parseAlgo(head) && head != "default")))
      return {"directory " + d, head == "auto" ? "" : head, tail};
  }
  return {};
}

// File names such as "allreduce_tree.txt" or "ring_ll128.log": words naming one algorithm and/or one
// protocol. NVLS and CollNet are also what NCCL_NVLS_ENABLE / NCCL_COLLNET_ENABLE switch on, and a
// log named after them is as often NCCL's default with the feature on (shared/data/h100-8gpu-together),
// so a name with them forces no algorithm. Two algorithms or two protocols: both kept, ambiguous.
std::vector<Claim> fileNameClaims(std::string_view path) {
  const size_t slash = path.rfind('/');
  std::string name(path.substr(slash == std::string_view::npos ? 0 : slash + 1));
  const std::string stem = lower(name.substr(0, name.find('.')));
  std::vector<std::string> words;
  for (size_t i = 0; i < stem.size();) {
    size_t j = i;
    while (j < stem.size() && std::isalnum(static_cast<unsigned char>(stem[j]))) ++j;
    if (j > i) words.push_back(stem.substr(i, j - i));
    i = j + 1;
  }
  bool feature = false;
  for (const std::string& w : words) feature = feature || w.starts_with("nvls") || w.starts_with("collnet");
  std::vector<Claim> claims;
  for (const std::string& w : words) {
    if (!feature && (w == "ring" || w == "tree" || w == "pat")) claims.push_back({"file name " + name, w, ""});
    else if (w == "ll" || w == "ll128" || w == "simple") claims.push_back({"file name " + name, "", w});
  }
  return claims;
}

void applyPathHints(std::string_view path, std::map<std::string, std::string>& env) {
  const Claim c = directoryClaim(path);
  if (c.algo.empty() && c.proto.empty()) return;
  if (!c.algo.empty()) env["NCCL_ALGO"] = c.algo;
  if (!c.proto.empty()) env["NCCL_PROTO"] = c.proto;
  env["_forced_from"] = "path";
}

// The forced algorithm/protocol the env knobs name (lists and exclusions force nothing).
Claim envClaim(const NcclTestsSection& s) {
  Claim c;
  auto knob = [&](const char* name, std::string& out) {
    auto it = s.env.find(name);
    if (it == s.env.end()) return;
    out = forcedListEntry(it->second, s.collective);
    if (out.empty()) return;
    auto from = s.env_from.find(name);
    c.from += (c.from.empty() ? "" : ", ") + (from == s.env_from.end() ? std::string("env") : from->second) + " " +
              name + "=" + it->second;
  };
  knob("NCCL_ALGO", c.algo);
  knob("NCCL_PROTO", c.proto);
  return c;
}

// Every source's claim merged: one algorithm and one protocol at most, else `ambiguous` says who disagrees.
void mergeClaims(NcclTestsSection& s, const std::vector<Claim>& claims) {
  std::string algoBy, protoBy;
  std::optional<Algo> algo;
  std::optional<Proto> proto;
  for (const Claim& c : claims) {
    if (c.algo.empty() && c.proto.empty()) continue;
    if (auto a = c.algo.empty() ? std::nullopt : parseAlgo(c.algo)) {
      if (algo && *algo != *a && s.ambiguous.empty())
        s.ambiguous = algoBy + " says " + std::string(algoNcclName(*algo)) + ", " + c.from + " says " +
                      std::string(algoNcclName(*a));
      if (!algo) algo = *a, algoBy = c.from;
    }
    if (auto p = c.proto.empty() ? std::nullopt : parseProto(c.proto)) {
      if (proto && *proto != *p && s.ambiguous.empty())
        s.ambiguous = protoBy + " says " + std::string(protoNcclName(*proto)) + ", " + c.from + " says " +
                      std::string(protoNcclName(*p));
      if (!proto) proto = *p, protoBy = c.from;
    }
    if (s.forced_from.find(c.from) == std::string::npos) s.forced_from += (s.forced_from.empty() ? "" : "; ") + c.from;
  }
  if (algo) s.forced_algo = *algo;
  if (proto) s.forced_proto = *proto;
}

struct FileFacts {  // what the whole file says, used when a section lacks it
  int np = 0, npernode = 0;
  int path_ranks = 0, path_nodes = 0;
  std::string version_from_path;
};

// [-_]n-?0*(\d+)-N-?0*(\d+)   e.g. job-n-00008-N-0002
std::optional<std::pair<std::string_view, std::string_view>> matchRanksNodes(std::string_view p) {
  for (size_t at = p.find_first_of("-_"); at != std::string_view::npos; at = p.find_first_of("-_", at + 1)) {
    Scan s{p, at + 1};
    if (!s.lit("n")) continue;
    s.lit("-");
    const std::string_view ranks = s.zerosThenDigits();
    if (ranks.empty() || !s.lit("-N")) continue;
    s.lit("-");
    if (const std::string_view nodes = s.zerosThenDigits(); !nodes.empty()) return std::pair{ranks, nodes};
  }
  return std::nullopt;
}

// _N(\d+)_G(\d+)   e.g. nccl_N10_G8
std::optional<std::pair<std::string_view, std::string_view>> matchNodesGpus(std::string_view p) {
  return searchAt(p, "_N", [](Scan s) -> std::optional<std::pair<std::string_view, std::string_view>> {
    std::string_view nodes, gpus;
    if ((nodes = s.digits()).empty() || !s.lit("_G") || (gpus = s.digits()).empty()) return std::nullopt;
    return std::pair{nodes, gpus};
  });
}

// nccl-(\d+\.\d+\.\d+)
std::optional<std::string_view> matchVersionInPath(std::string_view p) {
  return searchAt(p, "nccl-", [](Scan s) -> std::optional<std::string_view> {
    const size_t from = s.i;
    if (s.digits().empty() || !s.lit(".") || s.digits().empty() || !s.lit(".") || s.digits().empty())
      return std::nullopt;
    return s.s.substr(from, s.i - from);
  });
}

FileFacts factsFromPath(std::string_view path) {
  FileFacts f;
  if (auto rn = matchRanksNodes(path)) {
    f.path_ranks = countFrom(rn->first);
    f.path_nodes = countFrom(rn->second);
  } else if (auto ng = matchNodesGpus(path)) {
    f.path_nodes = countFrom(ng->first);
    f.path_ranks = static_cast<int>(std::min<int64_t>(int64_t{f.path_nodes} * countFrom(ng->second), int64_t{1} << 24));
  }
  if (auto v = matchVersionInPath(path)) f.version_from_path = std::string(*v);
  return f;
}

struct SectionBuilder {
  NcclTestsSection section;
  std::map<int, std::string> rank_hosts;
  int threads_x_gpus = 0;
  std::string library_version;
  TableLayout layout;
};

void finish(SectionBuilder& b, const FileFacts& facts, std::string_view path, ParsedLog& out) {
  NcclTestsSection& s = b.section;
  if (s.rows.empty()) return;
  if (s.collective.empty()) s.collective = collectiveFromPath(path);
  const int listedRanks = b.rank_hosts.empty() ? 0 : b.rank_hosts.rbegin()->first + 1;
  std::set<std::string> hosts;
  for (auto& [rank, host] : b.rank_hosts) hosts.insert(host);
  s.n_ranks = std::max(listedRanks, facts.np);
  if (s.n_ranks == 0) s.n_ranks = facts.path_ranks;
  if (s.n_ranks == 0) s.n_ranks = b.threads_x_gpus;  // single-process run
  if (!hosts.empty()) s.n_nodes = static_cast<int>(hosts.size());
  else if (facts.npernode > 0 && s.n_ranks > 0) s.n_nodes = s.n_ranks / facts.npernode;
  else s.n_nodes = facts.path_nodes;
  if (!b.rank_hosts.empty()) s.host = b.rank_hosts.begin()->second;
  if (s.nccl_version.empty()) s.nccl_version = b.library_version;
  if (s.nccl_version.empty()) s.nccl_version = facts.version_from_path;
  std::vector<Claim> claims = {envClaim(s), directoryClaim(path)};
  for (Claim& c : fileNameClaims(path)) claims.push_back(std::move(c));
  if (!s.env.contains("NCCL_ALGO") && !s.env.contains("NCCL_PROTO")) applyPathHints(path, s.env);
  applyForcedSettings(s);
  mergeClaims(s, claims);
  out.sections.push_back(std::move(s));
}


// What the file says so far, inherited by every later section.
struct FileEnv {
  std::map<std::string, std::string> values, from;
  std::string library, version;  // RCCL prints its version once, at the first communicator's init
};

// "NCCL_X=v" from an env line, the launcher or NCCL's INFO line (`from` says which).
void setEnv(SectionBuilder& b, FileEnv& fileEnv, const EnvPair& e, const char* from) {
  const std::string name(e.name);
  fileEnv.values[name] = b.section.env[name] = std::string(e.value);
  fileEnv.from[name] = b.section.env_from[name] = from;
}

// A "#" comment, a "> command" echo or a launcher line: table header, -np/-x flags, the *_perf binary.
void readCommentOrLauncher(std::string_view line, const std::vector<std::string_view>& words, SectionBuilder& b,
                           FileFacts& facts, FileEnv& fileEnv) {
  if (auto l = layoutFromHeader(words)) b.layout = *l;
  if (words[0] == ">" || line.find("mpirun") != std::string_view::npos || line.find("srun") != std::string_view::npos) {
    if (auto np = matchNp(line)) facts.np = countFrom(*np);
    if (auto n = matchNpernode(line)) facts.npernode = countFrom(*n);
    for (const EnvPair& e : matchEnvFlags(line)) setEnv(b, fileEnv, e, "launcher -x");
    for (auto w : words)
      if (w.ends_with("_perf") && b.section.collective.empty())
        if (auto c = canonicalCollective(w.substr(w.rfind('/') == std::string_view::npos ? 0 : w.rfind('/') + 1)))
          b.section.collective = *c;
  }
  if (auto lib = matchLibrary(line)) {
    const int v = countFrom(*lib);  // 22902 -> 2.29.2
    b.library_version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
}

}  // namespace

ParsedLog parseNcclTestsLog(std::string_view text, std::string_view path_hint) {
  ParsedLog out;
  FileFacts facts = factsFromPath(path_hint);
  FileEnv fileEnv;  // env lines apply to every later section
  SectionBuilder b;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (auto t = parseTuningLine(line)) {
      out.tuning.push_back(*t);
      continue;
    }
    const auto words = splitWords(line);
    if (words.empty()) continue;

    // A new header after table rows starts the next section (several tests in one log).
    const bool header = line.find("Collective test starting") != std::string_view::npos ||
                        line.find("nccl-tests version") != std::string_view::npos || isRcclTestsVersionLine(line);
    if (header && !b.section.rows.empty()) {
      finish(b, facts, path_hint, out);
      b = SectionBuilder{};
    }
    if (b.section.env.empty()) b.section.env = fileEnv.values, b.section.env_from = fileEnv.from;

    // First matching kind wins, in this order (a device line may also look like a comment, etc.).
    if (auto pos2 = line.find("Collective test starting:"); pos2 != std::string_view::npos) {
      const auto named = splitWords(line.substr(pos2 + 25));
      if (auto c = named.empty() ? std::nullopt : canonicalCollective(named[0])) b.section.collective = *c;
    } else if (auto dev = matchDevice(line)) {
      b.rank_hosts[countFrom(dev->rank)] = std::string(dev->host);
      b.section.gpu_name = std::string(dev->gpu);
    } else if (auto devs = matchCondensedDevices(line)) {
      const int first = countFrom(devs->rank), last = countFrom(devs->lastRank);
      for (int r = first; r <= last && r - first < 4096; ++r) b.rank_hosts[r] = std::string(devs->host);
      b.section.gpu_name = std::string(devs->gpu);
    } else if (isRcclTestsVersionLine(line)) {
      b.section.library = fileEnv.library = "RCCL";
    } else if (auto ver = matchLibraryVersion(line)) {
      b.section.library = fileEnv.library = std::string(ver->library);
      // NCCL's word as printed (as before); RCCL's number: its suffix is a git branch and hash.
      b.section.nccl_version = fileEnv.version = ver->library == "RCCL" ? versionNumber(ver->version) : std::string(ver->version);
    } else if (auto thr = matchThreads(line)) {
      b.threads_x_gpus = static_cast<int>(std::min<int64_t>(int64_t{countFrom(thr->first)} * countFrom(thr->second), int64_t{1} << 24));
    } else if (auto env = matchEnvLine(line)) {
      setEnv(b, fileEnv, *env, "env line");
    } else if (auto info = matchEnvInfo(line)) {
      setEnv(b, fileEnv, *info, "NCCL INFO set by environment:");
    } else if (words[0] == "#" || words[0] == ">" || line.find("mpirun") != std::string_view::npos ||
               line.find("srun") != std::string_view::npos) {
      readCommentOrLauncher(line, words, b, facts, fileEnv);
    } else if (auto l = layoutFromHeader(words)) {
      b.layout = *l;  // a header without '#' (shared/data/alps-gh200-slingshot-allreduce)
    } else if (auto row = parseRow(words, b.layout)) {
      b.section.rows.push_back(std::move(*row));
    }
  }
  finish(b, facts, path_hint, out);
  for (NcclTestsSection& s : out.sections) {  // a library named once holds for the file's sections
    if (s.library.empty()) s.library = fileEnv.library;
    if (s.nccl_version.empty() && s.library == fileEnv.library) s.nccl_version = fileEnv.version;
  }
  return out;
}

}  // namespace dynamiccl::ingest
