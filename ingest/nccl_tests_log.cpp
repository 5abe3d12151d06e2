// nccl-tests stdout (any *_perf binary): tables, device lines, env lines, and hints from the file's path.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <regex>
#include <set>
#include <sstream>

#include "ingest/ingest.h"

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

// Counts from a regex's digits, saturated at 2^24 (beyond any real job) instead of std::stoi's throw,
// so that sums and products of two of them still fit an int.
int countFrom(const std::string& digits) {
  constexpr int64_t kMaxCount = int64_t{1} << 24;
  int64_t v = kMaxCount;
  return parseNumber(std::string_view(digits), v) && v < kMaxCount ? static_cast<int>(v) : static_cast<int>(kMaxCount);
}

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
  for (auto [minKey, maxKey] : {std::pair{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"},
                                std::pair{"NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}}) {
    auto lo = s.env.find(minKey), hi = s.env.find(maxKey);
    int n = 0;
    if (lo != s.env.end() && hi != s.env.end() && lo->second == hi->second && parseNumber(std::string_view(lo->second), n))
      s.forced_channels = n;
  }
}

// Directory names such as ".../ring/", ".../auto_ll128/", ".../tree_simple/" mark forced runs
// when the log itself has no env lines (shared/data/l40s-pcie-cs244c).
void applyPathHints(std::string_view path, std::map<std::string, std::string>& env) {
  std::string p(path);
  std::stringstream parts(p);
  std::string part;
  std::vector<std::string> dirs;
  while (std::getline(parts, part, '/')) dirs.push_back(lower(part));
  if (!dirs.empty()) dirs.pop_back();  // the file name itself says nothing reliable
  for (const std::string& d : dirs) {
    const size_t us = d.rfind('_');
    const std::string head = us == std::string::npos ? d : d.substr(0, us);
    const std::string tail = us == std::string::npos ? "" : d.substr(us + 1);
    if (!env.contains("NCCL_ALGO") && !env.contains("NCCL_PROTO")) {
      if (parseAlgo(d) && d != "default") env["NCCL_ALGO"] = d;
      else if (!tail.empty() && parseProto(tail) && (head == "auto" || (parseAlgo(head) && head != "default"))) {
        env["NCCL_PROTO"] = tail;
        if (head != "auto") env["NCCL_ALGO"] = head;
      }
      if (env.contains("NCCL_ALGO") || env.contains("NCCL_PROTO")) env["_forced_from"] = "path";
    }
  }
}

struct FileFacts {  // what the whole file says, used when a section lacks it
  int np = 0, npernode = 0;
  int path_ranks = 0, path_nodes = 0;
  std::string version_from_path;
};

FileFacts factsFromPath(std::string_view path) {
  FileFacts f;
  const std::string p(path);
  std::smatch m;
  if (std::regex_search(p, m, std::regex(R"([-_]n-?0*(\d+)-N-?0*(\d+))"))) {  // job-n-00008-N-0002
    f.path_ranks = countFrom(m[1]);
    f.path_nodes = countFrom(m[2]);
  } else if (std::regex_search(p, m, std::regex(R"(_N(\d+)_G(\d+))"))) {  // nccl_N10_G8
    f.path_nodes = countFrom(m[1]);
    f.path_ranks = static_cast<int>(std::min<int64_t>(int64_t{f.path_nodes} * countFrom(m[2]), int64_t{1} << 24));
  }
  if (std::regex_search(p, m, std::regex(R"(nccl-(\d+\.\d+\.\d+))"))) f.version_from_path = m[1];
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
  if (!s.env.contains("NCCL_ALGO") && !s.env.contains("NCCL_PROTO")) applyPathHints(path, s.env);
  applyForcedSettings(s);
  out.sections.push_back(std::move(s));
}

}  // namespace

ParsedLog parseNcclTestsLog(std::string_view text, std::string_view path_hint) {
  static const std::regex kDevice(R"(Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*\S))");
  static const std::regex kEnvLine(R"(^\s*(?:export\s+|\+\s+|-x\s+)?(NCCL_[A-Z0-9_]+)=(\S+)\s*$)");
  static const std::regex kEnvInfo(R"((NCCL_[A-Z0-9_]+) set by environment to (\S+))");
  static const std::regex kEnvFlag(R"(-x\s+(NCCL_[A-Z0-9_]+)=(\S+))");
  static const std::regex kNcclVersion(R"(NCCL version (\S+))");
  static const std::regex kLibrary(R"(nccl-library=(\d+))");
  static const std::regex kThreads(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
  static const std::regex kNp(R"((?:^|\s)(?:-np\s+|--ntasks[= ])(\d+))");  // not "-n": nccl-tests' iterations
  static const std::regex kNpernode(R"(-(?:npernode\s+|-ntasks-per-node[= ])(\d+))");

  ParsedLog out;
  FileFacts facts = factsFromPath(path_hint);
  std::map<std::string, std::string> fileEnv;  // env lines apply to every later section
  SectionBuilder b;
  std::smatch m;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view view = text.substr(pos, end - pos);
    pos = end + 1;
    const std::string line(view);
    if (auto t = parseTuningLine(view)) {
      out.tuning.push_back(*t);
      continue;
    }
    const auto words = splitWords(view);
    if (words.empty()) continue;

    // A new header after table rows starts the next section (several tests in one log).
    const bool header = line.find("Collective test starting") != std::string::npos ||
                        line.find("nccl-tests version") != std::string::npos;
    if (header && !b.section.rows.empty()) {
      finish(b, facts, path_hint, out);
      b = SectionBuilder{};
    }
    if (b.section.env.empty()) b.section.env = fileEnv;

    if (auto pos2 = line.find("Collective test starting:"); pos2 != std::string::npos) {
      const auto named = splitWords(std::string_view(line).substr(pos2 + 25));
      if (auto c = named.empty() ? std::nullopt : canonicalCollective(named[0])) b.section.collective = *c;
    } else if (std::regex_search(line, m, kDevice)) {
      b.rank_hosts[countFrom(m[1])] = m[2];
      b.section.gpu_name = m[3];
    } else if (std::regex_search(line, m, kNcclVersion)) {
      b.section.nccl_version = m[1];
    } else if (std::regex_search(line, m, kThreads)) {
      b.threads_x_gpus = static_cast<int>(std::min<int64_t>(int64_t{countFrom(m[1])} * countFrom(m[2]), int64_t{1} << 24));
    } else if (std::regex_search(line, m, kEnvLine) || std::regex_search(line, m, kEnvInfo)) {
      fileEnv[m[1]] = m[2];
      b.section.env[m[1]] = m[2];
    } else if (words[0] == "#" || words[0] == ">" || line.find("mpirun") != std::string::npos ||
               line.find("srun") != std::string::npos) {
      if (auto l = layoutFromHeader(words)) b.layout = *l;
      if (words[0] == ">" || line.find("mpirun") != std::string::npos || line.find("srun") != std::string::npos) {
        if (std::regex_search(line, m, kNp)) facts.np = countFrom(m[1]);
        if (std::regex_search(line, m, kNpernode)) facts.npernode = countFrom(m[1]);
        for (auto it = std::sregex_iterator(line.begin(), line.end(), kEnvFlag); it != std::sregex_iterator(); ++it)
          fileEnv[(*it)[1]] = (*it)[2], b.section.env[(*it)[1]] = (*it)[2];
        for (auto w : words)
          if (w.ends_with("_perf") && b.section.collective.empty())
            if (auto c = canonicalCollective(w.substr(w.rfind('/') == std::string_view::npos ? 0 : w.rfind('/') + 1)))
              b.section.collective = *c;
      }
      if (std::regex_search(line, m, kLibrary)) {
        const int v = countFrom(m[1]);  // 22902 -> 2.29.2
        b.library_version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
      }
    } else if (auto l = layoutFromHeader(words)) {
      b.layout = *l;  // a header without '#' (shared/data/alps-gh200-slingshot-allreduce)
    } else if (auto row = parseRow(words, b.layout)) {
      b.section.rows.push_back(std::move(*row));
    }
  }
  finish(b, facts, path_hint, out);
  return out;
}

}  // namespace dynamiccl::ingest
