#include "offline/measurements/measurements.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "offline/platforms/platforms.h"

namespace dynamiccl::sim {

std::vector<std::string> splitCsvLine(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else out.back() += c;
    } else if (c == '"') quoted = true;
    else if (c == ',') out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
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
  std::ifstream in(csvPath);
  if (!in) return makeError("cannot read " + csvPath);
  std::string line;
  if (!std::getline(in, line)) return makeError(csvPath + ": empty");
  const std::vector<std::string> header = splitCsvLine(line);
  const std::vector<std::string> want = {"system", "collective", "nranks", "nnodes", "bytes", "algo",
                                         "proto", "nchannels", "chunk", "time_us", "busbw_gbps", "source_note"};
  if (header != want) return makeError(csvPath + ": not the interchange format (header differs)");
  LoadedMeasurements out;
  int lineNo = 1;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty()) continue;
    const auto f = splitCsvLine(line);
    if (f.size() != want.size()) return makeError(csvPath + ":" + std::to_string(lineNo) + ": wrong field count");
    const auto coll = parseCollective(f[1]);
    if (!coll) {
      ++out.skipped["not algo/proto tunable (" + f[1] + ")"];
      continue;
    }
    if (f[11].find("VALIDATION FAILED") != std::string::npos) {
      ++out.skipped["validation failed"];
      continue;
    }
    Measurement m;
    m.system = f[0];
    m.coll = *coll;
    try {
      m.nRanks = std::stoi(f[2]);
      m.nNodes = std::stoi(f[3]);
      m.bytes = std::stoull(f[4]);
      m.time_us = std::stod(f[9]);
    } catch (const std::exception&) {
      return makeError(csvPath + ":" + std::to_string(lineNo) + ": bad number");
    }
    if (!(m.time_us > 0) || !std::isfinite(m.time_us) || m.nRanks < 1 || m.nNodes < 1) {
      ++out.skipped["no usable time or shape"];
      continue;
    }
    if (m.nRanks == 1) {
      ++out.skipped["single rank (NCCL does not call the tuner)"];
      continue;
    }
    const auto a = parseAlgo(f[5]);
    const auto p = parseProto(f[6]);
    if (!a || !p) return makeError(csvPath + ":" + std::to_string(lineNo) + ": unknown algo/proto");
    if (*a != Algo::Default) m.forcedAlgo = *a;
    if (*p != Proto::Default) m.forcedProto = *p;
    m.note = f[11];
    m.ncclVersion = ncclVersionFromNote(m.note);
    const std::string v = variantOf(m.note);
    m.group = v.empty() ? m.system : m.system + " | " + v;
    out.rows.push_back(std::move(m));
  }
  return out;
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

Expected<model::Topology> topologyForSystem(const std::string& system, int nRanks, int nNodes, int ncclVersion) {
  if (nNodes < 1 || nRanks < nNodes || nRanks % nNodes != 0)
    return makeError("shape " + std::to_string(nRanks) + " ranks / " + std::to_string(nNodes) + " nodes is not uniform");
  auto has = [&](const char* s) { return system.find(s) != std::string::npos; };
  std::string name;
  if (has("L40S")) name = "l40s-pcie-4";
  else if (has("A100")) name = "dgx-a100";
  else if (has("GH200")) name = "gh200-slingshot";
  else if (has("A3 Mega")) name = "gcp-a3mega";
  else if (has("GB200")) name = "gb200-nvl72";
  else if (has("sm_103") || has("GB300")) name = "gb300-nvl72";
  else if (has("B200")) name = "dgx-b200";
  else if (has("H800")) name = "h800";
  else if (has("H100")) name = "dgx-h100";
  else return makeError("no preset matches system '" + system + "'");
  return topologyForPlatform(name, nRanks, nNodes, ncclVersion);
}

Expected<model::Topology> topologyForPlatform(const std::string& name, int nRanks, int nNodes, int ncclVersion) {
  if (nNodes < 1 || nRanks < nNodes || nRanks % nNodes != 0)
    return makeError("shape " + std::to_string(nRanks) + " ranks / " + std::to_string(nNodes) + " nodes is not uniform");
  auto t = preset(name, nNodes);
  if (!t) return t;
  const int perNode = nRanks / nNodes;
  // NVL72 rows measure groups inside one rack: such a group is one node of perNode GPUs.
  t->gpusPerNode = perNode;
  if (ncclVersion > 0) t->ncclVersion = ncclVersion;
  return t;
}

}  // namespace dynamiccl::sim
