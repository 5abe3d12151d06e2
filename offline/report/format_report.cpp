// The report as the terminal shows it: per communicator a summary, the configuration table and the
// gain table, then the rules that never applied and what the store does not record. At most 120 columns.
#include <cstdio>
#include <sstream>

#include "offline/report/report.h"

namespace dynamiccl::report {

std::string wrapText(const std::string& text, const std::string& first, const std::string& indent, size_t width) {
  std::istringstream words(text);
  std::string out, line = first, word;
  bool empty = true;
  while (words >> word) {
    if (!empty && line.size() + 1 + word.size() > width) out += line + "\n", line = indent, empty = true;
    // A word longer than a line (a deep store path) is cut where the line ends.
    while (line.size() + (empty ? 0 : 1) + word.size() > width) {
      const size_t room = width - line.size() - (empty ? 0 : 1);
      out += line + (empty ? "" : " ") + word.substr(0, room) + "\n";
      word.erase(0, room);
      line = indent, empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  return out + line + "\n";
}

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string pct(double share) { return std::isfinite(share) ? fmt("%.1f%%", 100 * share) : "-"; }
std::string signedPct(double g) { return std::isfinite(g) ? fmt("%+.1f%%", 100 * g) : "?"; }
std::string us(double v) { return std::isfinite(v) ? fmt("%.1f", v) : "not recorded"; }

std::string keyText(const KeyReport& k) {
  return k.collective + " " + (k.minBytes == k.maxBytes ? sizeText(k.minBytes) : sizeRangeText(k.minBytes, k.maxBytes));
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

void commBlock(std::ostringstream& out, const CommReport& c, size_t index, size_t count) {
  char line[256];
  out << wrapText("communicator " + std::to_string(index + 1) + " of " + std::to_string(count) + ": " +
              std::to_string(c.nRanks) + " ranks on " + std::to_string(c.nNodes) + " node(s), commHash " + hex(c.commId) +
              ", rank " + (c.rank >= 0 ? std::to_string(c.rank) : "unknown") + "; run " + std::to_string(c.run) + " of " +
              c.store + " (NCCL " + (c.ncclVersion.empty() ? "unknown" : c.ncclVersion) + ")");
  std::string reach = std::to_string(c.calls) + " measured calls, " + fmt("%.0f", c.time_us) +
                      " us of collective time; " + pct(c.reach.reached()) + " reached the tuner";
  if (c.reach.chosen) reach += "; NCCL ran the plugin's choice at " + pct(c.reach.share()) + " of " +
                               std::to_string(c.reach.chosen) + " calls it chose";
  for (const auto& [cause, n] : c.reach.unattributed)
    reach += "; " + std::string(applied::causeText(cause)) + ": " + std::to_string(n);
  for (const auto& [cause, n] : c.reach.causes)
    reach += "; not honoured, " + std::string(applied::causeText(cause)) + ": " + std::to_string(n);
  out << wrapText(reach, "  ");
  std::string money = "saved " + us(c.saved_us) + " us (measured calls x measured gain" +
                      (c.keysWithoutGain ? "; at " + std::to_string(c.keysWithoutGain) +
                                               " key(s) running off NCCL's choice no gain is recorded"
                                         : "") +
                      "), exploring " + std::to_string(c.exploreCalls) + " calls cost " + us(c.explore_us) +
                      " us, measuring cost " + us(c.measure_us) + " us (priced by " + c.price + "): net " +
                      fmt("%+.1f", c.net_us()) + " us";
  out << wrapText(money, "  ");
  std::snprintf(line, sizeof line, "  %-19s %6s %6s  %-14s %-14s %3s %6s %8s %9s\n", "key", "calls", "share",
                "NCCL alone", "ran", "ch", "chunk", "reached", "honoured");
  out << line;
  for (const KeyReport& k : c.keys) {
    const std::string ch = k.ran.channels > 0 ? std::to_string(k.ran.channels) : "-";
    const std::string chunk = k.ran.chunk > 0 ? sizeText(static_cast<uint64_t>(k.ran.chunk)) : "-";
    std::snprintf(line, sizeof line, "  %-19s %6lld %6s  %-14s %-14s %3s %6s %8s %9s\n", keyText(k).c_str(),
                  static_cast<long long>(k.calls), pct(k.share).c_str(), k.nccl.label().c_str(), k.ran.label().c_str(),
                  ch.c_str(), chunk.c_str(), pct(k.reach.reached()).c_str(),
                  k.reach.chosen ? pct(k.reach.share()).c_str() : "-");
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-19s %-9s %-13s %7s  %-16s %11s %5s %10s %11s\n", "key", "verdict", "candidate",
                "gain", "[low, high]", "samples", "runs", "saved_us", "explore_us");
  out << line;
  for (const KeyReport& k : c.keys) {
    const std::string interval =
        k.hasGain ? "[" + signedPct(k.gain.low) + ", " + signedPct(k.gain.high) + "]" : "";
    const std::string samples =
        k.hasGain ? std::to_string(k.gain.samples) + "/" + std::to_string(k.gain.baseSamples) : "";
    std::snprintf(line, sizeof line, "  %-19s %-9s %-13s %7s  %-16s %11s %5d %10s %11.1f\n", keyText(k).c_str(),
                  k.hasGain ? k.gain.state.c_str() : "none", k.hasGain ? k.gain.candidate.label().c_str() : "-",
                  k.hasGain ? signedPct(k.gain.gain).c_str() : "", interval.c_str(), samples.c_str(), k.gain.runs,
                  std::isfinite(k.saved_us) ? fmt("%.1f", k.saved_us).c_str() : "?", k.explore_us);
    out << line;
  }
}

}  // namespace

std::string formatReport(const Report& r) {
  std::ostringstream out;
  if (r.comms.empty()) out << wrapText("no measured calls of plugin runs (NCCL_PROFILER_PLUGIN must name this plugin)");
  for (size_t i = 0; i < r.comms.size(); ++i) commBlock(out, r.comms[i], i, r.comms.size()), out << "\n";
  if (r.comms.size() > 1) {
    CommReport all;
    for (const CommReport& c : r.comms)
      all.calls += c.calls, all.saved_us += c.saved_us, all.explore_us += c.explore_us, all.measure_us += c.measure_us,
          all.exploreCalls += c.exploreCalls;
    out << wrapText("all " + std::to_string(r.comms.size()) + " communicators: " + std::to_string(all.calls) +
                " measured calls; saved " + fmt("%.1f", all.saved_us) + " us, exploring " +
                std::to_string(all.exploreCalls) + " calls cost " + fmt("%.1f", all.explore_us) + " us, measuring " +
                fmt("%.1f", all.measure_us) + " us: net " + fmt("%+.1f", all.net_us()) + " us");
  }
  if (r.profiles.empty()) {
    out << wrapText("rules that never applied: not checked (the store does not name the profile the job loaded; "
                "--profile FILE)");
  } else {
    std::string names;
    for (const std::string& p : r.profiles) names += (names.empty() ? "" : ", ") + p;
    out << wrapText(std::to_string(r.rulesLoaded) + " rules loaded (" + names + "); " + std::to_string(r.neverApplied.size()) +
                " applied to no measured call" + (r.neverApplied.empty() ? "" : ":"));
    for (const UnappliedRule& u : r.neverApplied) out << wrapText(u.origin + " " + u.text + " (" + u.profile + ")", "  ");
  }
  out << "not recorded in the store:\n";
  for (const std::string& n : r.notRecorded) out << wrapText(n, "  ");
  return out.str();
}

}  // namespace dynamiccl::report
