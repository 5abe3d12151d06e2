#include "offline/measurements/measurements.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <tuple>

#include "offline/platforms/platforms.h"

namespace dynamiccl::measurements {

// nccl-tests' factor: what each rank's links carry relative to the algorithm bandwidth.
double busBandwidth_GBps(Collective coll, uint64_t bytes, double us, int nRanks) {
  if (!(us > 0)) return 0;
  const double n = std::max(1, nRanks), algbw = static_cast<double>(bytes) / (us * 1e3);
  if (coll == Collective::AllReduce) return algbw * 2 * (n - 1) / n;
  if (coll == Collective::AllGather || coll == Collective::ReduceScatter) return algbw * (n - 1) / n;
  return algbw;
}

namespace {

// Alps runs the same system under ten network-stack variants (plugin version, libfabric queue
// sizes) that change mid-size timings several-fold: each variant is its own calibration group.
std::string variantOf(const std::string& note) {
  if (note.rfind("results/", 0) != 0) return "";
  const size_t end = note.find("/job-");
  return end == std::string::npos ? "" : note.substr(8, end - 8);
}

}  // namespace

Expected<LoadedMeasurements> loadMeasurements(const std::string& csvPath) {
  auto text = readRegularFile(csvPath, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  if (!text) return makeError(text.error());
  auto parsed = parseInterchangeCsv(*text);
  if (!parsed) return makeError(csvPath + ": " + parsed.error());
  LoadedMeasurements out;
  for (InterchangeRow& r : *parsed) {
    const auto coll = parseCollective(r.collective);
    if (!coll) {
      ++out.skipped["not algo/proto tunable (" + r.collective + ")"];
      continue;
    }
    if (r.source_note.find("VALIDATION FAILED") != std::string::npos) {
      ++out.skipped["validation failed"];
      continue;
    }
    Measurement m;
    m.system = std::move(r.system);
    m.coll = *coll;
    m.nRanks = r.n_ranks;
    m.nNodes = r.n_nodes;
    m.bytes = r.bytes;
    m.time_us = r.time_us;
    if (!(m.time_us > 0) || !std::isfinite(m.time_us) || m.nRanks < 1 || m.nNodes < 1) {
      ++out.skipped["no usable time or shape"];
      continue;
    }
    if (m.nRanks == 1) {
      ++out.skipped["single rank (NCCL does not call the tuner)"];
      continue;
    }
    const auto a = parseAlgo(r.algo);
    const auto p = parseProto(r.proto);
    if (!a || !p) return makeError(csvPath + ": unknown algo/proto " + r.algo + "/" + r.proto);
    if (*a != Algo::Default) m.forcedAlgo = *a;
    if (*p != Proto::Default) m.forcedProto = *p;
    m.note = std::move(r.source_note);
    m.ncclVersion = ncclVersionFromNote(m.note);
    // A channel count is an arm of its own only where the row's text says it was forced; otherwise the
    // column is what NCCL reported running at its own choice (a TUNING log), NCCL's own count.
    if (const int stated = statedNcclSettings(m.system).with(statedNcclSettings(m.note)).channels; stated > 0)
      m.forcedChannels = r.n_channels > 0 ? r.n_channels : stated;
    else if (r.n_channels > 0)
      m.reportedChannels = r.n_channels;
    else if (!m.forced())
      m.reportedChannels = ncclChannelsFromNote(m.note);
    if (m.forced() && r.chunk > 0) m.forcedChunk = static_cast<uint64_t>(r.chunk);
    std::tie(m.statedRuns, m.statedSpread) = statedRunsOf(m.note);
    if (!m.forced()) m.ncclRan = ncclChoiceFromNote(m.note);
    const std::string v = variantOf(m.note);
    m.group = v.empty() ? m.system : m.system + " | " + v;
    out.rows.push_back(std::move(m));
  }
  return out;
}

std::string unknownSystemReason(const std::string& system) {
  return "no platform matches system '" + system + "' (add one: --platform FILE; or declare the dataset's: --measured-on NAME)";
}

int ncclVersionFromNote(const std::string& note) {
  for (size_t at = note.find("NCCL "); at != std::string::npos; at = note.find("NCCL ", at + 1)) {
    int major = 0, minor = 0, patch = 0;
    if (std::sscanf(note.c_str() + at, "NCCL %d.%d.%d", &major, &minor, &patch) == 3 && major == 2 && minor < 100 &&
        patch < 100)
      return major * 10000 + minor * 100 + patch;
  }
  return 0;
}

std::pair<int, double> statedRunsOf(std::string_view note) {
  const std::string text(note);
  int runs = 0;
  double spreadPct = 0;
  for (size_t at = text.find("median of "); at != std::string::npos && runs == 0; at = text.find("median of ", at + 1))
    if (std::sscanf(text.c_str() + at, "median of %d runs", &runs) != 1) runs = 0;
  if (runs < 2) return {0, 0};
  const std::string spreadWord = std::to_string(runs) + "-run spread ";
  const size_t at = text.find(spreadWord);
  if (at == std::string::npos || std::sscanf(text.c_str() + at + spreadWord.size(), "%lf%%", &spreadPct) != 1 ||
      !(spreadPct >= 0) || spreadPct > 1000)
    return {0, 0};
  return {runs, spreadPct / 100};
}

double logSdOfSpread(int runs, double spread) {
  // d2(n): the mean range of n standard normal draws.
  static constexpr double kD2[] = {0, 0, 1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078};
  if (runs < 2 || !(spread >= 0)) return 0;
  return std::log1p(spread) / kD2[std::min(runs, 10)];
}

std::optional<std::pair<Algo, Proto>> ncclChoiceFromNote(const std::string& note) {
  char algo[24] = {}, proto[24] = {};
  const size_t tuning = note.find("Algo "), report = note.find("reported ");
  if (tuning != std::string::npos) {
    if (std::sscanf(note.c_str() + tuning, "Algo %23[A-Za-z_] proto %23[A-Za-z0-9_]", algo, proto) != 2)
      return std::nullopt;
  } else if (report == std::string::npos ||
             std::sscanf(note.c_str() + report, "reported %23[A-Za-z_]/%23[A-Za-z0-9_]", algo, proto) != 2) {
    return std::nullopt;
  }
  const auto a = parseAlgo(algo);
  const auto p = parseProto(proto);
  if (!a || !p || *a == Algo::Default || *p == Proto::Default) return std::nullopt;
  return std::make_pair(*a, *p);
}

bool measuredOnRccl(std::string_view system) {
  for (size_t at = system.find("RCCL"); at != std::string_view::npos; at = system.find("RCCL", at + 1)) {
    const bool startsWord = at == 0 || !std::isalnum(static_cast<unsigned char>(system[at - 1]));
    const bool endsWord = at + 4 == system.size() || !std::isalnum(static_cast<unsigned char>(system[at + 4]));
    if (startsWord && endsWord) return true;
  }
  return false;
}

int ncclChannelsFromNote(const std::string& note) {
  int n = 0;
  if (const size_t at = note.find("Algo "); at != std::string::npos) {
    const size_t ch = note.find(" channels ", at);
    if (ch != std::string::npos && std::sscanf(note.c_str() + ch, " channels %d", &n) == 1 && n > 0) return n;
  }
  const size_t at = note.find("channels at this size");
  if (at == std::string::npos) return 0;
  const size_t colon = note.find(':', at);
  if (colon == std::string::npos || std::sscanf(note.c_str() + colon + 1, " %d", &n) != 1) return 0;
  return n > 0 && n <= 1024 ? n : 0;
}

namespace {

// The value after "<name>=" where the name stands as a word (after the start, a space or punctuation,
// or "NCCL_" when `bareToo`); "" when not stated.
std::string statedValue(std::string_view text, std::string_view name, bool bareToo) {
  for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const bool prefixed = at >= 5 && text.substr(at - 5, 5) == "NCCL_";
    const bool word = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_');
    if (!(prefixed || (bareToo && word)) || at + name.size() >= text.size() || text[at + name.size()] != '=') continue;
    size_t end = at + name.size() + 1;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
    // "RING,TREE" is a list (no one choice); "RING, NVLS_ENABLE=0" ends the value at the comma.
    if (end + 1 < text.size() && text[end] == ',' && std::isalnum(static_cast<unsigned char>(text[end + 1]))) return "";
    return std::string(text.substr(at + name.size() + 1, end - at - name.size() - 1));
  }
  return "";
}

// A forced channel count a text states: "NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8", both bounds equal
// (or NCCL_MIN_CTAS and NCCL_MAX_CTAS), or "NCCL_NCHANNELS=8"; 0 where none (a bound alone forces no count).
int statedChannels(std::string_view text) {
  const auto count = [&](std::string_view name) {
    for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) continue;
      size_t v = at + name.size();
      if (v >= text.size() || text[v] != '=') continue;
      ++v;
      // A chain "NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8" sets both to the last value.
      while (v < text.size() && text.substr(v).starts_with("NCCL_")) {
        const size_t eq = text.find('=', v);
        if (eq == std::string_view::npos) return 0;
        v = eq + 1;
      }
      int n = 0;
      while (v < text.size() && std::isdigit(static_cast<unsigned char>(text[v])) && n < 100000) n = n * 10 + (text[v++] - '0');
      if (n > 0) return n;
    }
    return 0;
  };
  for (auto [low, high] : {std::pair{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"}, std::pair{"NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}})
    if (const int lo = count(low); lo > 0 && lo == count(high)) return lo;
  return count("NCCL_NCHANNELS");
}
}  // namespace

bool StatedNcclSettings::allows(Algo a) const {
  if (algo && a != *algo) return false;
  if (nvlsOff && (a == Algo::Nvls || a == Algo::NvlsTree)) return false;
  return !(collnetOff && (a == Algo::CollNetDirect || a == Algo::CollNetChain));
}

StatedNcclSettings StatedNcclSettings::with(const StatedNcclSettings& over) const {
  StatedNcclSettings s = *this;
  s.nvlsOff = s.nvlsOff || over.nvlsOff;
  s.collnetOff = s.collnetOff || over.collnetOff;
  if (over.algo) s.algo = over.algo;
  if (over.proto) s.proto = over.proto;
  if (over.channels > 0) s.channels = over.channels;
  return s;
}

StatedNcclSettings statedNcclSettings(std::string_view text) {
  StatedNcclSettings s;
  s.nvlsOff = statedValue(text, "NVLS_ENABLE", true) == "0";
  s.collnetOff = statedValue(text, "COLLNET_ENABLE", false) == "0";
  if (const auto a = parseAlgo(statedValue(text, "ALGO", false)); a && *a != Algo::Default) s.algo = *a;
  if (const auto p = parseProto(statedValue(text, "PROTO", false)); p && *p != Proto::Default) s.proto = *p;
  s.channels = statedChannels(text);
  return s;
}

Expected<model::Topology> topologyForSystem(const std::string& system, int nRanks, int nNodes, int ncclVersion) {
  auto known = platforms::registry();
  if (!known) return makeError("platforms: " + known.error());
  const platforms::Platform* platform = (*known)->forSystem(system);
  if (!platform) return makeError(unknownSystemReason(system));
  return topologyForPlatform(platform->name, nRanks, nNodes, ncclVersion);
}

Expected<model::Topology> topologyForPlatform(const std::string& name, int nRanks, int nNodes, int ncclVersion) {
  if (nNodes < 1 || nRanks < nNodes || nRanks % nNodes != 0)
    return makeError("shape " + std::to_string(nRanks) + " ranks / " + std::to_string(nNodes) + " nodes is not uniform");
  auto known = platforms::registry();
  if (!known) return makeError("platforms: " + known.error());
  const platforms::Platform* platform = (*known)->find(name);
  if (!platform) return makeError("no platform named '" + name + "'");
  model::Topology t = platform->topology;
  t.nNodes = nNodes;
  // NVL72 rows measure groups inside one rack: such a group is one node of perNode GPUs.
  t.gpusPerNode = nRanks / nNodes;
  if (ncclVersion > 0) t.ncclVersion = ncclVersion;
  return t;
}

}  // namespace dynamiccl::measurements
